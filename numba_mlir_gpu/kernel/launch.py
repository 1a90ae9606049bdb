"""The launch of a kernel, as one call in the host function our njit
compiles (dispatcher.py writes it): `launch(g0, g1, g2, l0, l1, l2, *args)`,
the global and local sizes (ints: njit's dispatcher then calls the compiled
code directly on CuPy arguments) and the kernel's arguments.

GPU: one `gpu.launch` of ceil(global / local) blocks of `local` threads per
dimension, each thread calling the kernel function (body.py) with its ids;
work-groups are blocks, so barriers are `gpu.barrier`, local arrays the
block's shared memory. Items past the global size skip the call; kernels
with barriers or collectives never have such items: their partial last
groups are launches of their own with smaller blocks (_by_regions), so
every thread of a block reaches every barrier.

CPU: an `scf.parallel` over the work-groups (the CPU target's parallel loop),
the items of a group in order inside it. Kernels with barriers or group
collectives run through cpu_groups.py, which splits the function at them.
"""
from __future__ import annotations

from numba.core import types
from numba.core.extending import typeof_impl
from numba.core.typing import signature

from .._mlir import arith, func, gpu, ir, memref, scf
from ..lowering.build import cmpi, const_index, select
from ..lowering.calls import _conform, _flatten
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import sequential_for
from ..lowering.registry import call_rules
from ..lowering.values import ArrayValue
from ..runtime.device_arrays import DeviceArrayType
from . import checks, cpu_groups
from .body import ID_KINDS, group_extent, lower_kernel_function, shared_memory_type
from .typing import call_template


# The dynamic shared memory a block may use without opting in (cuFuncSetAttribute)
MAX_SHARED_BYTES = 48 * 1024


class KernelLaunch:
    """The callee of a launcher's one call: launches `py_func`."""

    def __init__(self, py_func):
        self.py_func = py_func
        self.numba_type = types.Function(
            call_template(self, lambda args: signature(types.none, *args)))
        call_rules.register(self)(lower_launch)

    def __repr__(self) -> str:
        return f"<launch of kernel {self.py_func.__qualname__}>"


@typeof_impl.register(KernelLaunch)
def _typeof_launch(value, context):
    return value.numba_type


def _copy_back(lw, args: list, written: set) -> None:
    """NumPy arrays the kernel writes (stores, atomics) are copied back from
    their GPU mirrors at the launcher's exit: the launcher's own IR writes
    nothing, so the GPU target's argument analysis did not ask for it."""
    strategy = lw.target
    done = {id(m[0]) for m in strategy.mirrors}
    for k, value in enumerate(args):
        if k not in written or not isinstance(value, ArrayValue) or value.origin is None \
                or isinstance(value.type, DeviceArrayType):
            continue
        origin = value.origin
        if origin in strategy.written or id(value.memref) in done:
            continue
        host = lw.arguments[origin][0]
        ty = lw.argtypes[origin]
        extents = [memref.DimOp(host, const_index(a)).result for a in range(ty.ndim)]
        strategy.mirrors.append((value.memref, host, extents, ty.layout == "C"))


def _index(value: ir.Value) -> ir.Value:
    return arith.IndexCastOp(ir.IndexType.get(), value).result


def _gpu_launch(grid: list, block: list, shared: ir.Value, body) -> None:
    """A gpu.launch of `grid` blocks of `block` threads whose threads run
    body(block ids, thread ids, block sizes, shared memory base)."""
    op = gpu.LaunchOp(tuple(grid), tuple(block), dynamic_shared_memory_size=shared)
    args = list(op.regions[0].blocks[0].arguments)
    with ir.InsertionPoint(op.regions[0].blocks[0]):
        base = gpu.DynamicSharedMemoryOp(shared_memory_type()).result
        body(args[0:3], args[3:6], args[9:12], base)
        gpu.TerminatorOp()


def _by_regions(global_size: list, local_size: list, launch_region) -> None:
    """Kernels with barriers run only whole blocks, so that every thread of
    a block reaches every barrier: the launch is cut per dim into its whole
    groups and its partial last group (a block of just its items), at most
    2^3 launches of the same kernel, in a host loop; each region is
    launch_region(groups, block size, first group id), when not empty."""
    full = [arith.DivUIOp(g, l).result for g, l in zip(global_size, local_size)]
    rest = [arith.RemUIOp(g, l).result for g, l in zip(global_size, local_size)]
    zero, one = const_index(0), const_index(1)
    loop = scf.ForOp(zero, const_index(8), one)
    with ir.InsertionPoint(loop.body):
        region = loop.induction_variable
        grid, block, offset, nonempty = [], [], [], None
        for d in range(3):
            bit = arith.AndIOp(arith.ShRUIOp(region, const_index(d)).result, one).result
            partial = cmpi("ne", bit, zero)
            grid.append(select(partial, select(cmpi("ne", rest[d], zero), one, zero), full[d]))
            block.append(select(partial, arith.MaxUIOp(rest[d], one).result, local_size[d]))
            offset.append(select(partial, full[d], zero))
            some = cmpi("ne", grid[d], zero)
            nonempty = some if nonempty is None else arith.AndIOp(nonempty, some).result
        branch = scf.IfOp(nonempty)
        with ir.InsertionPoint(branch.then_block):
            launch_region(grid, block, offset)
            scf.YieldOp([])
        scf.YieldOp([])


def lower_launch(lw, args, sig, expr):
    launch: KernelLaunch = lw.read(expr.func).obj
    sizes, args = args[:6], args[6:]         # global 0..2, local 0..2, then the kernel's
    argtypes = tuple(sig.args[6:])
    gpu_target = bool(getattr(lw.target, "gpu", False))
    name, params, results, context, state = lower_kernel_function(
        lw.mlower, launch.py_func, argtypes, gpu_target, expr.loc)
    checks.check_kernel(state)
    if gpu_target:
        _copy_back(lw, args, checks.written_parameters(state))
    flat: list = []
    for value, ty in zip(args, argtypes):
        _flatten(value, ty, flat, expr)
    flat = [_conform(v, t) for v, t in zip(flat, params)]
    global_size = [_index(v) for v in sizes[:3]]
    local_size = [_index(v) for v in sizes[3:6]]
    groups = [arith.CeilDivUIOp(g, l).result for g, l in zip(global_size, local_size)]

    def call(group_id, local_id, guard: bool, extent=None, shared=()):
        first = [arith.MulIOp(g, l).result for g, l in zip(group_id, local_size)]
        global_id = [arith.AddIOp(f, t).result for f, t in zip(first, local_id)]
        ids = {"global": global_id, "local": local_id, "group": group_id,
               "global_size": global_size, "local_size": local_size, "num_groups": groups,
               "extent": extent or group_extent(first, local_size, global_size)}
        operands = flat + [v for kind in ID_KINDS for v in ids[kind]] + list(shared)
        if not guard:
            func.CallOp(results, name, operands)
            return
        inside = None
        for g, n in zip(global_id, global_size):
            below = cmpi("ult", g, n)
            inside = below if inside is None else arith.AndIOp(inside, below).result
        branch = scf.IfOp(inside)
        with ir.InsertionPoint(branch.then_block):
            func.CallOp(results, name, operands)
            scf.YieldOp([])

    if gpu_target:
        if context.shared_bytes > MAX_SHARED_BYTES:
            raise UnsupportedConstructError(
                f"a kernel whose local arrays and group operations need {context.shared_bytes} "
                f"bytes of shared memory per work-group (at most {MAX_SHARED_BYTES})",
                state.func_ir.loc)
        shared = arith.ConstantOp(ir.IntegerType.get_signless(32), context.shared_bytes).result
        if not context.barriers:
            def guarded(block_id, thread_id, block_size, base):
                call(block_id, thread_id, guard=True, shared=[base])
            _gpu_launch(groups, local_size, shared, guarded)
            return None

        def launch_region(grid, block, offset):
            def whole(block_id, thread_id, block_size, base):
                group_id = [arith.AddIOp(o, b).result for o, b in zip(offset, block_id)]
                call(group_id, thread_id, guard=False, extent=block_size, shared=[base])
            _gpu_launch(grid, block, shared, whole)
        _by_regions(global_size, local_size, launch_region)
        return None
    if context.barriers:
        cpu_groups.run_groups(lw, name, flat, results, context, global_size, local_size, groups)
        return None

    def per_group(indices, accs):
        group_id = list(reversed(indices))           # dim 0 fastest, as on the GPU
        sequential_for(list(reversed(local_size)),
                       lambda items: call(group_id, list(reversed(items)), guard=True))
        return []
    lw.target.parallel_loop(lw, list(reversed(groups)), per_group, [])
    return None
