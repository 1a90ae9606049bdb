"""Typed Numba IR of one function -> one MLIR `func.func`.

Numba blocks become MLIR blocks joined by `cf` branches. Numba IR is not in
SSA form, so every scalar variable gets a rank-0 `memref.alloca` slot that
`mem2reg` later promotes; arrays, tuples, iterators and compile-time objects
are bound once as Python-side values (see values.py).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
from numba.core import ir as nir
from numba.core import types
from numba.core.ir_utils import find_topo_order
from numba.core.typing.typeof import typeof as typeof_value

from .._mlir import arith, cf, func, ir, memref
from . import calls, casts, intrinsics
from .arrays import constant_array, copy_array, fortran_storage
from .build import const, logical_not
from .carried import CarriedArrays, carried_arrays
from .errors import UnsupportedConstructError
from .device_functions import DeviceFunctionType, call_device_function
from .exceptions import STATUS, FunctionErrors, status_type
from .registry import (array_operator_rules, attr_rules, binop_rules, call_rules, expr_rules,
                       inplace_array_rules, method_rules, stmt_rules, tuple_operator_rules,
                       ufunc_rules, unary_rules)
from .types import (flat_types, is_fortran, is_optional_array, is_optional_scalar, is_scalar,
                    is_static, param_type, static_value, storage_type, strided_memref_type)
from .values import (ArrayValue, BoundMethod, ExceptionValue, OptionalArraySlot, OptionalSlots,
                     OptionalValue, PyValue, RangeSlots, RangeValue, ReturnPlan, SliceValue,
                     TupleValue, any_array)


class Scope:
    """The variables of one region: the function body or a loop body."""

    def __init__(self, alloca_block: ir.Block, parent: Optional["Scope"] = None):
        self.alloca_block = alloca_block
        self.parent = parent
        self.slots: dict[str, ir.Value] = {}
        self.values: dict[str, object] = {}
        self.none_arrays: dict = {}       # Numba array type -> the placeholder of None

    def find_slot(self, name: str) -> Optional[ir.Value]:
        scope = self
        while scope is not None:
            if name in scope.slots:
                return scope.slots[name]
            scope = scope.parent
        return None

    def find_value(self, name: str):
        scope = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            scope = scope.parent
        return None


@dataclass
class RegionBlocks:
    """Numba labels lowered into one MLIR region, and what leaving it means."""
    blocks: dict[int, ir.Block]
    exit: Optional[Callable[[], None]] = None   # called for a jump out of it
    carried: Optional[CarriedArrays] = None     # array variables its blocks pass along


def _describe(callee, sig) -> str:
    if isinstance(callee, BoundMethod):
        return f"the method '.{callee.name}()' of {sig.recvr}"
    if isinstance(callee, PyValue):
        obj = callee.obj
        name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", repr(obj))
        module = getattr(obj, "__module__", None)
        return f"'{module}.{name}'" if module and module != "builtins" else f"'{name}'"
    return f"a value of type {type(callee).__name__}"


def _describe_value(value) -> str:
    if isinstance(value, PyValue):
        return f"the compile-time object {value.obj!r}"
    return f"a {type(value).__name__}"


class FunctionLowerer:
    """Lowers one typed Numba function into `func.func @name` of a module."""

    def __init__(self, state, module_lowering, name: str, entry: bool = True,
                 parallel_depth: int = 0):
        self.func_ir = state.func_ir
        self.typemap = state.typemap
        self.calltypes = state.calltypes
        self.argtypes = tuple(state.args)
        self.restype = state.return_type
        self.mlower = module_lowering
        self.target = module_lowering.strategy
        self.name = name
        self.entry = entry          # the function Numba's wrapper calls
        self.plan = ReturnPlan(self.restype)
        self.result_types: Optional[list] = None
        # per array a callee returns: the parameter it returns unchanged (on
        # every return), else None
        self.returned_arguments: Optional[list] = None
        self.scope: Scope = None
        self.region: RegionBlocks = None
        self.ip: Optional[ir.InsertionPoint] = None
        self.parallel_depth = parallel_depth    # > 0: in a parallel loop body or a kernel
        self.kernel_depth = parallel_depth      # > 0: the whole function runs in a kernel
        self.body_depth = 0                     # > 0: inside a loop body region
        self.cooperation = None                 # a block's threads share each iteration
        # arrays made inside a kernel come from the device heap (targets/gpu/heap.py):
        # a called function inside a kernel, or a loop body lowered for it
        self.device_heap = parallel_depth > 0
        self.allocates_on_device = False        # this function made such an array
        self.status_cell: Optional[ir.Value] = None   # a kernel callee's: its caller's status
        self.random_stream = None               # np.random draws of a parallel iteration
        self.loc = self.func_ir.loc
        self.errors: Optional[FunctionErrors] = None
        self.entry_block: Optional[ir.Block] = None
        self.body_region: Optional[RegionBlocks] = None
        self.label: Optional[int] = None        # the Numba block being lowered
        self.global_arrays: dict = {}          # id(ndarray) -> ArrayValue
        # Optional arrays' own None placeholders in loop bodies that no array
        # has replaced yet, each with the first block of the region whose
        # scope made it (_write_optional_array)
        self.unfilled: list[tuple[ArrayValue, ir.Block]] = []
        # id(statement) -> rule(lw, stmt) lowering it in place of its class's
        # rule: what the parfor lowering decides about statements of a body
        # (parallel/scatter.py: updates made atomic)
        self.replaced_statements: dict[int, Callable] = {}

    # -- entry point -------------------------------------------------------

    def lower(self, module: ir.Module) -> func.FuncOp:
        loc = self.loc
        arg_mlir = self.parameter_types()
        with ir.InsertionPoint(module.body), self.location(loc):
            fn = func.FuncOp(self.name, ir.FunctionType.get(arg_mlir, []))
            entry = fn.add_entry_block()
        self.entry_block = entry
        self.scope = Scope(entry)
        self.errors = FunctionErrors(self.mlower.exceptions, fn.body)
        self.arguments = self._split_arguments(list(entry.arguments))
        blocks = self.func_ir.blocks
        order = find_topo_order(blocks)
        carried = CarriedArrays(self, carried_arrays(blocks, self.typemap))
        region = RegionBlocks({label: fn.body.blocks.append(*carried.types)
                               for label in sorted(blocks)}, carried=carried)
        self.body_region = region
        with ir.InsertionPoint(entry), self.location(loc):
            if self.entry:
                self.target.prologue(self)
            carried.make_placeholders()
            cf.BranchOp(carried.placeholders, region.blocks[order[0]])
        self.lower_blocks(blocks, region)
        # Result types are known only once the return statements are lowered:
        # arrays that are arguments are handed back by the wrapper, not MLIR.
        result_types = self.result_types or []
        self.errors.finalize(result_types)
        if self.status_cell is not None:
            arg_mlir = arg_mlir + [self.status_cell.type]
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(arg_mlir, [status_type()] + result_types))
        return fn

    def parameter_types(self) -> list:
        """The MLIR types of the function's parameters: its flat arguments
        (a subclass may take more: kernel/body.py)."""
        return [param_type(t, self.loc, self.entry)
                for ty in self.argtypes for t in flat_types(ty, self.loc)]

    def heap_status(self) -> ir.Value:
        """Where a failed device-heap allocation stores its status
        (targets/gpu/heap.py): in a function called inside a kernel, a cell
        its caller passes (a last parameter, added on first need); in a loop
        body, the loop's status flag."""
        if self.kernel_depth > 0:
            if self.status_cell is None:
                cell = ir.MemRefType.get([], status_type())
                self.status_cell = self.entry_block.add_argument(cell, ir.Location.unknown())
            return self.status_cell
        return self.errors.require_flag(self)

    def _split_arguments(self, flat: list) -> list:
        """Group the flat MLIR block arguments by Numba argument."""
        grouped = []
        for ty in self.argtypes:
            n = len(flat_types(ty, self.loc))
            grouped.append(flat[:n])
            flat = flat[n:]
        return grouped

    # -- blocks and statements --------------------------------------------

    def lower_blocks(self, blocks: dict, region: RegionBlocks) -> None:
        outer, self.region = self.region, region
        outer_ip, outer_label = self.ip, self.label
        try:
            for label in sorted(blocks):
                block = blocks[label]
                self.ip = ir.InsertionPoint(region.blocks[label])
                self.label = label
                if region.carried is not None:
                    region.carried.bind_block_arguments(region.blocks[label])
                self.lower_stmts(block.body)
                if not block.is_terminated:
                    with self.ip, self.location(self.loc):
                        self.jump_out()
        finally:
            self.region, self.ip, self.label = outer, outer_ip, outer_label

    def lower_stmts(self, stmts) -> None:
        """Statements at `self.ip`, which a statement may move on (to the
        block after a check of a callee's error status)."""
        for stmt in stmts:
            with self.ip, self.location(stmt.loc):
                self.lower_stmt(stmt)
                self.errors.check_pending(self)

    def lower_stmt(self, stmt) -> None:
        rule = self.replaced_statements.get(id(stmt)) or stmt_rules.get(type(stmt))
        if rule is None:
            raise UnsupportedConstructError(f"the statement {type(stmt).__name__} ({stmt})", stmt.loc)
        self.loc = stmt.loc
        rule(self, stmt)

    def jump_to(self, label: int) -> None:
        if label in self.region.blocks:
            cf.BranchOp(self.branch_operands(), self.region.blocks[label])
        else:
            self.jump_out()

    def branch_operands(self) -> list:
        """What a branch between blocks of the current region passes: its
        carried arrays."""
        carried = self.region.carried
        return carried.operands() if carried is not None else []

    def is_carried(self, name: str) -> bool:
        """Is `name` passed between the blocks of the current region?"""
        carried = self.region.carried if self.region is not None else None
        return carried is not None and name in carried.names

    def jump_out(self) -> None:
        if self.region.exit is None:
            raise UnsupportedConstructError("control flow leaving the function", self.loc)
        self.region.exit()

    # -- variables -----------------------------------------------------------

    def typeof(self, name: str) -> types.Type:
        return self.typemap[name]

    def new_slot(self, ty: types.Type, scope: Optional[Scope] = None) -> ir.Value:
        scope = scope or self.scope
        with ir.InsertionPoint.at_block_begin(scope.alloca_block):
            return memref.AllocaOp(ir.MemRefType.get([], storage_type(ty, self.loc)), [], []).result

    @staticmethod
    def load_slot(slot: ir.Value, ty: types.Type) -> ir.Value:
        value = memref.LoadOp(slot, []).result
        if isinstance(types.unliteral(ty), types.Boolean):      # kept as a byte
            value = arith.TruncIOp(ir.IntegerType.get_signless(1), value).result
        return value

    @staticmethod
    def store_slot(value: ir.Value, slot: ir.Value, ty: types.Type) -> None:
        if isinstance(types.unliteral(ty), types.Boolean):
            value = arith.ExtUIOp(ir.IntegerType.get_signless(8), value).result
        memref.StoreOp(value, slot, [])

    def read(self, var: nir.Var):
        slot = self.scope.find_slot(var.name)
        if slot is not None:
            return self.load_slot(slot, self.typeof(var.name))
        value = self.scope.find_value(var.name)
        if value is None:
            raise UnsupportedConstructError(f"reading variable '{var.name}' here", var.loc)
        if isinstance(value, RangeSlots):
            return RangeValue(*(memref.LoadOp(slot, []).result for slot in value.slots()))
        if isinstance(value, OptionalSlots):
            ty = self.typeof(var.name)
            return OptionalValue(self.load_slot(value.valid, types.boolean),
                                 self.load_slot(value.value, ty.type), ty)
        if isinstance(value, OptionalArraySlot):
            return OptionalValue(self.load_slot(value.valid, types.boolean), value.array,
                                 self.typeof(var.name))
        return value

    def read_as(self, var: nir.Var, ty: types.Type):
        return self.convert(self.read(var), self.typeof(var.name), ty)

    def convert(self, value, fromty: types.Type, ty: types.Type):
        """casts.cast, and Numba's conversions of Optional values: into an
        Optional (None, a scalar, another Optional) and out of one, which
        raises TypeError when it holds None (as Numba's optional_to_any)."""
        if isinstance(types.unliteral(ty), types.Optional):
            return self.optional(value, fromty, ty)
        if isinstance(value, OptionalValue):
            unwrapped = types.unliteral(ty)
            if not (is_scalar(unwrapped) or isinstance(unwrapped, types.Array)):
                return value
            # Numba's optional_to_any names the held type
            self.errors.raise_if(self, logical_not(value.valid), self.errors.code(
                TypeError, (f"expected {value.type.type}, got None",)))
            return casts.cast(value.value, value.type.type, ty)
        return casts.cast(value, fromty, ty)

    def optional(self, value, fromty: types.Type, ty: types.Optional) -> OptionalValue:
        inner = types.unliteral(ty.type)
        if isinstance(inner, types.Array):
            return self._optional_array(value, fromty, ty)
        if not is_scalar(inner):
            raise UnsupportedConstructError(f"values of type {ty}", self.loc)
        if isinstance(value, OptionalValue):
            return OptionalValue(value.valid, casts.cast(value.value, value.type.type, inner), ty)
        if (isinstance(value, PyValue) and value.obj is None) or \
                isinstance(fromty, (types.NoneType, types.Omitted)):
            return OptionalValue(const(types.boolean, 0), const(inner, 0), ty)
        if not isinstance(value, ir.Value):
            raise UnsupportedConstructError(
                f"a {ty} value holding {_describe_value(value)}", self.loc)
        if isinstance(fromty, types.Optional):      # a value already of the held type
            fromty = fromty.type
        return OptionalValue(const(types.boolean, 1), casts.cast(value, fromty, inner), ty)

    def _optional_array(self, value, fromty: types.Type, ty: types.Optional) -> OptionalValue:
        if isinstance(value, OptionalValue):
            return OptionalValue(value.valid, value.value, ty)
        if (isinstance(value, PyValue) and value.obj is None) or \
                isinstance(fromty, (types.NoneType, types.Omitted)):
            return OptionalValue(const(types.boolean, 0), self.none_array(ty.type), ty)
        if not isinstance(value, ArrayValue):
            raise UnsupportedConstructError(
                f"a {ty} value holding {_describe_value(value)}", self.loc)
        return OptionalValue(const(types.boolean, 1), value, ty)

    def none_array(self, ty: types.Array) -> ArrayValue:
        """What an Optional(array) holding None holds: an empty memref on the
        stack, made once per scope at its top (not in a loop's body), which
        the buffer deallocation never frees (it owns no allocation) and
        nothing reads (every use is behind the flag's check)."""
        scope = self.scope
        if ty not in scope.none_arrays:
            strided = strided_memref_type(ty, self.loc)
            with ir.InsertionPoint.at_block_begin(scope.alloca_block), self.location(self.loc):
                empty = memref.AllocaOp(
                    ir.MemRefType.get([0] * ty.ndim, strided.element_type), [], []).result
                scope.none_arrays[ty] = memref.CastOp(strided, empty).result
        return ArrayValue(scope.none_arrays[ty], ty, view=True)

    def write(self, name: str, value, fromty: Optional[types.Type] = None) -> None:
        ty = self.typeof(name)
        if is_scalar(types.unliteral(ty)):
            if isinstance(value, PyValue) and isinstance(value.obj, (bool, int, float, complex,
                                                                     np.number)):
                # an omitted argument's default (`def f(x, tol=1e-8)` called
                # as f(x)), typed as its value's scalar type
                value = const(types.unliteral(ty), value.obj)
                fromty = None
            if not isinstance(value, ir.Value):
                raise UnsupportedConstructError(
                    f"a {ty} variable ('{name}') holding {_describe_value(value)}", self.loc)
            if fromty is not None:
                value = casts.cast(value, fromty, ty)
            slot = self.scope.find_slot(name)
            if slot is None:
                slot = self.scope.slots[name] = self.new_slot(ty)
            self.store_slot(value, slot, ty)
            return
        if isinstance(value, RangeValue) and isinstance(types.unliteral(ty), types.RangeType):
            self._write_range(name, value)
            return
        if is_optional_scalar(types.unliteral(ty)):
            self._write_optional(name, self.optional(value, fromty or ty, ty))
            return
        if is_optional_array(ty):
            self._write_optional_array(name, self.optional(value, fromty or ty, ty))
            return
        bound = self.scope.values.get(name)
        if bound is not None and bound is not value and not self.is_carried(name):
            raise UnsupportedConstructError(
                f"assigning variable '{name}' of type {ty} more than once "
                "(only scalars may be reassigned)", self.loc)
        self.scope.values[name] = value

    def _write_optional(self, name: str, value: OptionalValue) -> None:
        """Optional(scalar) variables live in two slots, so that every
        assignment (None in one branch, a value in another) merges like a
        scalar's."""
        slots = self.scope.find_value(name)
        if not isinstance(slots, OptionalSlots):
            slots = self.scope.values[name] = OptionalSlots(
                self.new_slot(types.boolean), self.new_slot(value.type.type))
        self.store_slot(value.valid, slots.valid, types.boolean)
        self.store_slot(value.value, slots.value, value.type.type)

    def _write_optional_array(self, name: str, value: OptionalValue) -> None:
        """An Optional(array) variable: the flag in a slot, the array bound
        (a carried variable's block argument, carried.py, when it is assigned
        on several paths)."""
        held = self.scope.find_value(name)
        carried = self.is_carried(name)
        array = value.value
        if isinstance(held, OptionalArraySlot):
            slot = held.valid
            if not carried and held.array is not array:
                array = self._share_binding(name, held.array, array, value.type)
        else:
            slot = self.new_slot(types.boolean)
            if not carried and self.region is not self.body_region and \
                    self._is_none_array(array):
                array = self._own_placeholder(array)
        self.store_slot(value.valid, slot, types.boolean)
        self.scope.values[name] = OptionalArraySlot(slot, array)

    def _share_binding(self, name: str, held: ArrayValue, array: ArrayValue, ty) -> ArrayValue:
        """A loop body's blocks carry nothing: an Optional array assigned in
        several of them holds None and at most one array from before the body
        (as a prange body reads), under one binding. A variable first bound
        to None gets an empty placeholder of its own (shared by its copies),
        which the array, once assigned, replaces in every use so far (blocks
        lowered earlier, such as an inner loop's header, see it through the
        loop's back edge)."""
        if self._is_none_array(array):
            return held
        if held is array:
            return held
        for empty, real in ((held, array), (array, held)):
            first = self._unfilled_block(empty)
            if first is not None and self._unfilled_block(real) is None and \
                    not self._is_none_array(real) and self._defined_outside_region(real, first):
                self._fill_placeholder(empty, real, first)
                return empty
        raise UnsupportedConstructError(
            f"assigning variable '{name}' of type {ty} more than once here (in a prange "
            "body, an Optional array may hold None and one array defined before the body)",
            self.loc)

    def _is_none_array(self, array: ArrayValue) -> bool:
        scope = self.scope
        while scope is not None:
            if any(array.memref == m for m in scope.none_arrays.values()):
                return True
            scope = scope.parent
        return False

    def _own_placeholder(self, none: ArrayValue) -> ArrayValue:
        """An empty array, at the top of the scope, for one variable."""
        with ir.InsertionPoint.at_block_begin(self.scope.alloca_block), self.location(self.loc):
            ty = none.memref.type
            empty = memref.AllocaOp(ir.MemRefType.get([0] * ty.rank, ty.element_type), [], [])
            own = ArrayValue(memref.CastOp(ty, empty.result).result, none.type, view=True)
        self.unfilled.append((own, self.scope.alloca_block))
        return own

    def _unfilled_block(self, array: ArrayValue) -> Optional[ir.Block]:
        return next((first for own, first in self.unfilled if own is array), None)

    def _fill_placeholder(self, own: ArrayValue, array: ArrayValue, first: ir.Block) -> None:
        """Every use of a variable's own None placeholder (the reads lowered
        so far, in blocks lowered before this assignment: a loop's back edge
        reaches them with the array) becomes a use of `array`."""
        self.unfilled = [(o, b) for o, b in self.unfilled if o is not own]
        with ir.InsertionPoint.at_block_begin(first), self.location(self.loc):
            memref_ = array.memref
            if memref_.type != own.memref.type:
                memref_ = memref.CastOp(own.memref.type, memref_).result
        own.memref.replace_all_uses_with(memref_)
        own.memref = memref_

    def _defined_outside_region(self, array: ArrayValue, first: ir.Block) -> bool:
        """Is the array's memref defined outside the region whose first
        block is `first` (so that it dominates every block of it: a value
        from outside that the region uses dominates the operation holding
        the region)?"""
        value = array.memref
        block = value.owner if isinstance(value, ir.BlockArgument) \
            else value.owner.operation.block
        region = first.region
        while True:
            if block.region == region:
                return False
            parent = block.owner            # the operation holding the block's region
            if parent is None or parent.operation.name == "func.func":
                return True
            block = parent.operation.block

    def _write_range(self, name: str, value: RangeValue) -> None:
        """A range object lives in three i64 slots (start, stop, step), so
        that it may be assigned in several places (`r = range(0, n) if g >= 0
        else range(-g, n)`) and the branches merge like scalars do."""
        slots = self.scope.find_value(name)
        if not isinstance(slots, RangeSlots):
            slots = self.scope.values[name] = RangeSlots(
                *(self.new_slot(types.int64) for _ in range(3)))
        for part, slot in zip((value.start, value.stop, value.step), slots.slots()):
            memref.StoreOp(part, slot, [])

    def bind_scalar(self, name: str, value: ir.Value, scope: Scope) -> None:
        """Give `name` a fresh slot in `scope` holding `value`."""
        slot = scope.slots[name] = self.new_slot(self.typeof(name), scope)
        self.store_slot(value, slot, self.typeof(name))

    # -- expressions --------------------------------------------------------

    def lower_expr(self, expr, target: str):
        if isinstance(expr, nir.Var):
            return self.read(expr)
        if isinstance(expr, nir.Const):
            return self.constant(expr.value, self.typeof(target))
        if isinstance(expr, (nir.Global, nir.FreeVar)):
            return self.constant(expr.value, self.typeof(target))
        if isinstance(expr, nir.Arg):
            return self.argument(expr.index)
        if not isinstance(expr, nir.Expr):          # `yield` (generators), ...
            raise UnsupportedConstructError(
                f"generators ('{type(expr).__name__.lower()}')" if isinstance(expr, nir.Yield)
                else f"the statement value {expr}", expr.loc)
        rule = expr_rules.get(expr.op)
        if rule is None:
            raise UnsupportedConstructError(f"the expression '{expr.op}' ({expr})", expr.loc)
        return rule(self, expr, target)

    def constant(self, value, ty: types.Type):
        ty = types.unliteral(ty)
        if isinstance(value, (np.datetime64, np.timedelta64)) and is_scalar(ty):
            return const(types.int64, int(value.astype(np.int64)))     # NaT: INT64_MIN
        if is_scalar(ty) and isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
            return const(ty, value)
        if isinstance(ty, types.BaseTuple) and isinstance(value, tuple):
            return TupleValue([self.constant(v, t) for v, t in zip(value, ty.types)], ty)
        if isinstance(ty, types.Array) and isinstance(value, np.ndarray):
            return self.global_array(value, ty)
        if isinstance(ty, types.SliceType) and isinstance(value, slice):     # a global slice
            return SliceValue(*(None if v is None else const(types.int64, v)
                                for v in (value.start, value.stop, value.step)))
        return PyValue(value)

    def global_array(self, value: np.ndarray, ty: types.Array) -> ArrayValue:
        """A global NumPy array (a constant to Numba): copied once, at the top
        of the function, from a constant memref.global into a new array, which
        host code and kernels can both read."""
        key = id(value)
        if key not in self.global_arrays:
            # the entry block of a host function is host code, also when the
            # global is first read inside a parallel loop (a kernel)
            depth, self.parallel_depth = self.parallel_depth, self.kernel_depth
            try:
                with ir.InsertionPoint.at_block_terminator(self.entry_block), \
                        self.location(self.loc):
                    self.global_arrays[key] = constant_array(self, value, ty)
            finally:
                self.parallel_depth = depth
        return self.global_arrays[key]

    def argument(self, index: int):
        ty = self.argtypes[index]
        return self._rebuild(ty, list(self.arguments[index]), origin=index)

    def _rebuild(self, ty, flat: list, origin=None, in_tuple=None):
        """`in_tuple`: the index of the tuple argument an item belongs to (a
        write into one of its arrays is a write of that argument)."""
        if isinstance(ty, types.BaseTuple):
            holder = origin if origin is not None else in_tuple
            return TupleValue([self._rebuild(t, flat, None, holder) for t in ty.types], ty)
        if isinstance(ty, types.Omitted) and isinstance(ty.value, (tuple, np.ndarray)):
            # a default left out (`bounds=np.empty((0, 2))`, `args=()`), passed on
            # to callees and tuple(): a constant of its value's type
            return self.constant(ty.value, typeof_value(ty.value))
        if is_static(ty):
            return PyValue(static_value(ty))
        if is_optional_scalar(ty):
            return OptionalValue(flat.pop(0), flat.pop(0), ty)
        if is_optional_array(ty):
            valid = flat.pop(0)
            return OptionalValue(valid, self._rebuild(ty.type, flat, origin, in_tuple), ty)
        value = flat.pop(0)
        if isinstance(ty, types.Array):
            if not self.entry:         # (origin: to tell which parameter a callee returns)
                return ArrayValue(value, ty, origin)
            return self.target.bind_array_argument(self, value, ty, origin, in_tuple)
        return value

    def call(self, callee, args: list, sig, expr):
        """Lower a call: a lowering rule for the callee if there is one, else
        the jitted function or Python @overload that implements it."""
        fnty = self.typeof(expr.func.name)
        if isinstance(fnty, DeviceFunctionType):
            return call_device_function(self, fnty, args, sig, expr)
        if isinstance(callee, BoundMethod):
            rule = method_rules.get_by_type(types.unliteral(sig.recvr), callee.name)
            if rule is not None:
                return rule(self, [callee.receiver] + args, sig, expr)
        elif isinstance(callee, PyValue):
            if isinstance(callee.obj, np.ufunc) and (any_array(args)
                                                      or callee.obj not in call_rules):
                rule = ufunc_rules.get(callee.obj)
                if rule is None:
                    raise UnsupportedConstructError(f"np.{callee.obj.__name__} on arrays",
                                                    expr.loc)
                return rule(self, callee.obj, args, sig, expr)
            rule = call_rules.get(callee.obj)
            if rule is not None:
                return rule(self, args, sig, expr)
            if (isinstance(callee.obj, (types.NumberClass, types.Number))
                    or _is_numpy_scalar_type(callee.obj)) and len(args) == 1 \
                    and isinstance(sig.return_type, (types.Number, types.Boolean)):
                return casts.cast(args[0], sig.args[0], sig.return_type)   # dtype(x)
            if isinstance(callee.obj, type) and issubclass(callee.obj, tuple) and \
                    isinstance(sig.return_type, types.BaseNamedTuple):
                return self._named_tuple(args, sig, expr)
            if isinstance(callee.obj, type) and issubclass(callee.obj, BaseException):
                return PyValue(ExceptionValue(callee.obj, tuple(
                    a.obj if isinstance(a, PyValue) else "<value computed at run time>"
                    for a in args)))
        if isinstance(callee, PyValue) and intrinsics.is_intrinsic(callee.obj):
            return intrinsics.lower_intrinsic_call(self, callee.obj, args, sig, expr)
        implementation = calls.jitted_implementation(self, expr, sig)
        if implementation is not None:
            return calls.call_jitted(self, *implementation, args, expr, sig.return_type)
        if isinstance(callee, PyValue) and type(callee.obj) in ufunc_rules:
            # a numba.vectorize DUFunc: as a NumPy ufunc, its kernel per element
            return ufunc_rules.get(type(callee.obj))(self, callee.obj, args, sig, expr)
        raise UnsupportedConstructError(f"calling {_describe(callee, sig)}", expr.loc)

    def _named_tuple(self, args: list, sig, expr) -> TupleValue:
        """A namedtuple class called with its fields (Numba's np.iinfo /
        np.finfo results; keywords come folded into field order, as Numba
        types the call): a tuple whose fields `getattr` reads."""
        ty = sig.return_type
        if len(args) != len(ty.types):
            raise UnsupportedConstructError(f"constructing {ty} this way", expr.loc)
        return TupleValue([casts.cast(a, t, item_ty) for a, t, item_ty
                           in zip(args, sig.args, ty.types)], ty)

    def binop(self, fn, lhs, rhs, sig, expr):
        # element-wise operators on arrays; others (`@`) have rules of their own
        rule = array_operator_rules.get(fn) if any_array((lhs, rhs)) else None
        if rule is not None:
            return rule(self, fn, [lhs, rhs], sig, expr)
        if isinstance(lhs, TupleValue) or isinstance(rhs, TupleValue):
            # shape arithmetic and comparisons in Numba's implementations
            rule = tuple_operator_rules.get(fn)
            if rule is not None:
                return rule(self, fn, [lhs, rhs], sig, expr)
        rule = binop_rules.get(fn)
        if rule is None:
            raise UnsupportedConstructError(f"the operator {getattr(fn, '__name__', fn)}", expr.loc)
        return rule(self, [lhs, rhs], sig, expr)

    def inplace_binop(self, fn, immutable_fn, lhs, rhs, sig, expr):
        """`lhs <op>= rhs` (`fn` operator.iadd..., `immutable_fn` operator.add...):
        an array is updated in place and returned, other values get the plain
        operator."""
        if isinstance(lhs, ArrayValue):
            rule = inplace_array_rules.get(fn)
            if rule is None:
                raise UnsupportedConstructError(f"the operator {fn.__name__} on arrays", expr.loc)
            return rule(self, fn, [lhs, rhs], sig, expr)
        return self.binop(immutable_fn, lhs, rhs, sig, expr)

    def unary(self, fn, value, sig, expr):
        if any_array((value,)):
            rule = array_operator_rules.get(fn)
            if rule is None:
                raise UnsupportedConstructError(
                    f"the operator {getattr(fn, '__name__', fn)} on arrays", expr.loc)
            return rule(self, fn, [value], sig, expr)
        rule = unary_rules.get(fn)
        if rule is None:
            raise UnsupportedConstructError(f"the unary operator {getattr(fn, '__name__', fn)}", expr.loc)
        return rule(self, [value], sig, expr)

    def getattr(self, value, ty, attr: str, expr, target: str):
        if isinstance(value, PyValue):
            if isinstance(value.obj, types.DType) and attr == "type":
                return PyValue(value.obj.dtype)       # a.dtype.type: the scalar type
            try:
                return self.constant(getattr(value.obj, attr), self.typeof(target))
            except AttributeError:
                if isinstance(self.typeof(target), types.NumberClass):
                    # np.datetime64[] (a generic unit) in Numba's parfor allocations:
                    # the typed class stands for it
                    return PyValue(self.typeof(target))
                raise UnsupportedConstructError(f"the attribute '{attr}' of {value.obj!r}", expr.loc)
        rule = attr_rules.get_by_type(types.unliteral(ty), attr)
        if rule is not None:
            return rule(self, value, ty, expr)
        if isinstance(value, TupleValue) and isinstance(value.type, types.BaseNamedTuple) \
                and attr in value.type.fields:
            return value.items[value.type.fields.index(attr)]     # a field by name
        if isinstance(self.typeof(target), types.BoundFunction):
            return BoundMethod(value, attr)
        raise UnsupportedConstructError(f"the attribute '.{attr}' of {ty}", expr.loc)

    # -- return ---------------------------------------------------------------

    def lower_return(self, value, ty: types.Type) -> None:
        results, origins, params = [], [], []
        self._flatten_result(value, ty, self.restype, results, origins, params)
        result_types = [r.type for r in results]
        if self.returned_arguments is not None:
            params = [p if p == q else None for p, q in zip(params, self.returned_arguments)]
        self.returned_arguments = params
        if self.result_types is not None and (origins != self.plan.array_origins
                                              or result_types != self.result_types):
            raise UnsupportedConstructError(
                "returning different kinds of arrays from different return statements", self.loc)
        self.plan.array_origins, self.result_types = origins, result_types
        if self.entry:
            self.target.epilogue(self)
        func.ReturnOp([const(STATUS, 0)] + results)

    def _flatten_result(self, value, ty, resty, results, origins, params):
        if isinstance(resty, types.BaseTuple):
            if not isinstance(value, TupleValue):
                raise UnsupportedConstructError(f"returning {ty} as {resty}", self.loc)
            for item, ity, rty in zip(value.items, value.type.types, resty.types):
                self._flatten_result(item, ity, rty, results, origins, params)
        elif is_static(resty):
            return                        # known to the caller at compile time
        elif isinstance(resty, types.Array):
            if not isinstance(value, ArrayValue):
                raise UnsupportedConstructError(f"returning {ty}", self.loc)
            origins.append(value.origin if self.entry else None)
            params.append(None if value.view or types.unliteral(ty) != resty else value.origin)
            if origins[-1] is None and is_fortran(resty):
                results.append(fortran_storage(self, value, resty))
            elif origins[-1] is None:    # a new array (or any, from a callee)
                if value.view:           # its memory belongs to another array
                    value = copy_array(self, value)
                results.append(value.memref)
        elif is_scalar(resty):
            results.append(self.convert(value, ty, resty))
        elif is_optional_scalar(resty):
            held = self.optional(value, ty, resty)
            results += [held.valid, held.value]
        elif is_optional_array(resty) and not is_fortran(resty.type):
            # a new array the caller owns, of one type on every return: a
            # None's placeholder or a view copied (empty for None)
            held = self.optional(value, ty, resty)
            array = held.value
            origins.append(None)
            params.append(None)
            if array.view or array.origin is not None:
                array = copy_array(self, array)
            strided = strided_memref_type(resty.type, self.loc)
            results += [held.valid, array.memref if array.memref.type == strided
                        else memref.CastOp(strided, array.memref).result]
        else:
            raise UnsupportedConstructError(f"returning {resty}", self.loc)

    # -- locations ------------------------------------------------------------

    @contextlib.contextmanager
    def location(self, loc):
        if loc is None or loc.filename is None:
            with ir.Location.unknown():
                yield
            return
        with ir.Location.file(loc.filename, loc.line or 0, (loc.col or 0) + 1):
            yield


def _is_numpy_scalar_type(obj) -> bool:
    """np.complex64, np.float32...: the class itself, called as a conversion."""
    return isinstance(obj, type) and issubclass(obj, np.generic)
