"""The kernel's own function, lowered once per launch signature: the user's
function for one work-item, taking after its arguments the work-item's
ids and the launch's sizes (KernelIds), which the id functions read.

Both targets call it per work-item: the GPU from a `gpu.launch` of one
thread per work-item (its copy in the GPU module is inlined there), the CPU
from a loop over the items of each work-group (launch.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from numba.core import types

from .._mlir import arith, ir
from ..compiler.passes import KERNEL_FUNCTION_ATTR
from ..lowering.errors import UnsupportedConstructError
from ..lowering.function import FunctionLowerer
from ..lowering.types import flat_types, param_type

# The id values a kernel function takes, three (dims 0..2) of each, in order.
# "extent": the items the work-item's group has per dim, min(local size,
# global size - the group's first global id): smaller than the local size
# in a partial last group, whose collectives and flattened ids count only them.
ID_KINDS = ("global", "local", "group", "global_size", "local_size", "num_groups", "extent")


def group_extent(first: list, local_size: list, global_size: list) -> list:
    """The "extent" ids of the group whose first global ids are `first`."""
    return [arith.MinUIOp(l, arith.SubIOp(g, f).result).result
            for f, l, g in zip(first, local_size, global_size)]


@dataclass
class KernelContext:
    """What the lowering of one kernel function learns and needs."""
    gpu: bool
    ids: dict = field(default_factory=dict)      # kind -> [index value] * 3
    shared_bytes: int = 0                        # GPU: dynamic shared memory used
    barriers: list = field(default_factory=list)     # locations of barriers, collectives
    shuffles: list = field(default_factory=list)     # locations of shuffles
    shared_base: object = None      # GPU: the block's dynamic shared memory (i8)
    private_arrays: list = field(default_factory=list)   # CPU: (memref.view, bytes)

    def take_shared(self, nbytes: int) -> int:
        """An offset in the block's dynamic shared memory for `nbytes`."""
        offset = (self.shared_bytes + 15) // 16 * 16
        self.shared_bytes = offset + nbytes
        return offset


def shared_memory_type() -> ir.MemRefType:
    space = ir.Attribute.parse("#gpu.address_space<workgroup>")
    return ir.MemRefType.get([ir.ShapedType.get_dynamic_size()],
                             ir.IntegerType.get_signless(8), memory_space=space)


class KernelBodyLowerer(FunctionLowerer):
    """A FunctionLowerer whose function takes 21 more `index` parameters,
    the ids (ID_KINDS), and on the GPU the block's dynamic shared memory,
    bound in `kernel` (a KernelContext) for the rules."""

    def __init__(self, state, module_lowering, name: str, context: KernelContext):
        super().__init__(state, module_lowering, name, entry=False, parallel_depth=1)
        self.kernel = context
        # CPU: range loops may hold barriers (cpu_groups.py keeps slots per item)
        self.loop_bounds_in_slots = not context.gpu

    def parameter_types(self) -> list:
        """C-contiguous arrays as identity-layout memrefs (what the launcher
        has: an index times the element size, no stride to load), then the
        ids and the GPU's shared memory."""
        flat = [param_type(t, self.loc, entry=getattr(t, "layout", None) == "C")
                for ty in self.argtypes for t in flat_types(ty, self.loc)]
        extra = [ir.IndexType.get()] * (3 * len(ID_KINDS))
        return flat + extra + ([shared_memory_type()] if self.kernel.gpu else [])

    def _split_arguments(self, flat: list) -> list:
        count = 3 * len(ID_KINDS) + (1 if self.kernel.gpu else 0)
        flat, extra = flat[:len(flat) - count], flat[len(flat) - count:]
        for k, kind in enumerate(ID_KINDS):
            self.kernel.ids[kind] = extra[3 * k:3 * k + 3]
        if self.kernel.gpu:
            self.kernel.shared_base = extra[-1]
        return super()._split_arguments(flat)

    def lower(self, module: ir.Module):
        fn = super().lower(module)
        fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
        if self.kernel.gpu:
            fn.attributes[KERNEL_FUNCTION_ATTR] = ir.UnitAttr.get()
        return fn


def lower_kernel_function(mlower, py_func, argtypes: tuple, gpu: bool, loc):
    """Lower `py_func` for `argtypes` as a kernel function into mlower's
    module; returns (function name, its MLIR parameter types, KernelContext,
    the typed state)."""
    state = mlower.typed_ir(py_func, argtypes, mlower.typingctx, mlower.targetctx)
    if not isinstance(types.unliteral(state.return_type), types.NoneType):
        raise UnsupportedConstructError(
            f"a kernel that returns a value ({state.return_type}); kernels return nothing",
            state.func_ir.loc)
    context = KernelContext(gpu=gpu)
    base = re.sub(r"[^A-Za-z0-9_]", "_", py_func.__name__)
    name = f"{base}_kernel_{len(mlower.callees)}_{id(context) % 10000}"
    lowerer = KernelBodyLowerer(state, mlower, name, context)
    fn = lowerer.lower(mlower.module)
    fn_type = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    return name, list(fn_type.inputs), list(fn_type.results), context, state
