"""Lowering rules of the names a kernel calls (api.py), keyed by the Python
objects, for the kernel function (body.py): ids from its id parameters,
barriers as the GPU's barrier markers (cpu_groups.py splits the CPU's
function at them), local arrays in the block's shared memory (GPU) or one
per work-group (CPU), private arrays on the stack, atomics as
`memref.atomic_rmw` or a compare-and-exchange, group collectives through
shared memory (GPU) or exchange buffers (CPU), shuffles as `gpu.shuffle`."""
from __future__ import annotations

import operator

from numba.core import ir as nir
from numba.core import types
from numba.core.errors import ConstantInferenceError

from .._mlir import arith, func, gpu, ir, memref, scf
from ..compiler.atomics import FENCE_MARKER
from ..lowering.atomics import _declare_marker, _from_bits, _to_bits
from ..lowering.build import cmpi, const, const_index, declare_function, select
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.registry import call_rules
from ..lowering.types import memref_type, storage_type
from ..lowering.values import ArrayValue, TupleValue
from ..targets.gpu.reduce import barrier as gpu_barrier, declare_barrier_marker
from . import api
from .typing import ARRAY_MAKERS, ATOMIC_OPS, ATOMIC_TYPES, GROUP_OPS

MAX_GROUP_ITEMS = 1024          # a GPU block's most threads
CPU_BARRIER = "_numba_mlir_gpu_kernel_barrier"
CPU_EXCHANGE = "_numba_mlir_gpu_kernel_exchange_"     # + op + element type


class KernelConstructError(UnsupportedConstructError):
    """A kernel construct refused at compile time (kernel API, part 3)."""

    def __init__(self, message: str, loc=None):
        super().__init__(message, loc)


def _context(lw, what: str, loc):
    context = getattr(lw, "kernel", None)
    if context is None:
        raise KernelConstructError(f"{what} outside the body of a @kernel function "
                                   "(only the kernel itself may call it)", loc)
    return context


def _select_dim(values: list, dim: ir.Value, outside: int) -> ir.Value:
    """values[dim]; `outside` for a constant dim past 2 (OpenCL's 0 for ids,
    1 for sizes)."""
    owner = dim.owner
    if isinstance(owner, ir.Operation) or hasattr(owner, "name"):
        op = owner.operation
        if op.name == "arith.constant":
            k = ir.IntegerAttr(op.attributes["value"]).value
            return values[k] if 0 <= k < 3 else const_index(outside)
    dim = arith.IndexCastOp(ir.IndexType.get(), dim).result
    result = values[0]
    for k in (1, 2):
        result = select(cmpi("eq", dim, const_index(k)), values[k], result)
    return result


def _id_rule(kind: str):
    def rule(lw, args, sig, expr):
        context = _context(lw, kind.replace("_", " ") + " ids", expr.loc)
        value = _select_dim(context.ids[kind], args[0],
                            1 if kind in ("global_size", "local_size", "num_groups") else 0)
        return arith.IndexCastOp(ir.IntegerType.get_signless(64), value).result
    return rule


for _kind, _fn in (("global", api.get_global_id), ("local", api.get_local_id),
                   ("group", api.get_group_id), ("global_size", api.get_global_size),
                   ("local_size", api.get_local_size), ("num_groups", api.get_num_groups)):
    call_rules.register(_fn)(_id_rule(_kind))


def flat_local(context):
    """The work-item's flattened local id (dim 0 fastest) and the group's
    number of items, over the group's items (its extent: a partial group
    numbers only those that exist, as the GPU's smaller block does)."""
    lid, size = context.ids["local"], context.ids["extent"]
    flat = arith.AddIOp(lid[0], arith.MulIOp(size[0], arith.AddIOp(
        lid[1], arith.MulIOp(size[1], lid[2]).result).result).result).result
    count = arith.MulIOp(arith.MulIOp(size[0], size[1]).result, size[2]).result
    return flat, count


def emit_barrier(lw) -> None:
    if lw.kernel.gpu:
        declare_barrier_marker(lw.mlower.module)
        gpu_barrier()
    else:
        declare_function(lw.mlower.module, CPU_BARRIER, [], [])
        func.CallOp([], CPU_BARRIER, [])


@call_rules.register(api.barrier)
def lower_barrier(lw, args, sig, expr):
    context = _context(lw, "barrier()", expr.loc)
    context.barriers.append(expr.loc)
    emit_barrier(lw)
    return None


@call_rules.register(api.mem_fence)
def lower_mem_fence(lw, args, sig, expr):
    """An acquire-release fence (`llvm.fence`): the work-group's scope for
    LOCAL_MEM_FENCE alone (PTX fence.acq_rel.cta), else the whole device."""
    context = _context(lw, "mem_fence()", expr.loc)
    flags = api.LOCAL_MEM_FENCE | api.GLOBAL_MEM_FENCE
    if args:
        try:
            flags = int(constant_value(lw.func_ir, expr.args[0]))
        except (ValueError, KeyError, AttributeError, TypeError):
            pass
    scope = "block" if context.gpu and flags == api.LOCAL_MEM_FENCE else "system"
    marker = declare_function(lw.mlower.module, FENCE_MARKER + scope, [], [])
    func.CallOp([], marker, [])
    return None


# -- local and private arrays --------------------------------------------------

_BINOPS = {operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul,
           operator.floordiv: operator.floordiv, operator.mod: operator.mod,
           operator.lshift: operator.lshift, operator.rshift: operator.rshift}


def constant_value(func_ir, var, depth: int = 0):
    """The compile-time value of `var`: constants, globals, tuples of them
    and integer arithmetic on them (`(TILE, TILE + 1)`); else ValueError."""
    if depth > 20:
        raise ValueError(var)
    try:
        return func_ir.infer_constant(var.name)
    except (ConstantInferenceError, KeyError, AttributeError):
        pass
    definition = func_ir.get_definition(var)
    if isinstance(definition, nir.Expr):
        if definition.op == "binop" and definition.fn in _BINOPS:
            return _BINOPS[definition.fn](constant_value(func_ir, definition.lhs, depth + 1),
                                          constant_value(func_ir, definition.rhs, depth + 1))
        if definition.op == "build_tuple":
            return tuple(constant_value(func_ir, v, depth + 1) for v in definition.items)
    if isinstance(definition, nir.Var):
        return constant_value(func_ir, definition, depth + 1)
    raise ValueError(var)


def _constant_shape(lw, expr, what: str) -> tuple:
    try:
        shape = constant_value(lw.func_ir, expr.args[0])
    except (ValueError, KeyError, AttributeError, TypeError, ZeroDivisionError):
        shape = None
    if isinstance(shape, int):
        shape = (shape,)
    if not (isinstance(shape, tuple) and all(isinstance(n, int) and n >= 0 for n in shape)):
        raise KernelConstructError(
            f"{what} with a shape that is not a compile-time constant (local and private "
            "arrays need a constant shape: literals or global constants)", expr.loc)
    return shape


def _array_rule(kind: str):
    def rule(lw, args, sig, expr):
        what = f"{kind}.array()"
        context = _context(lw, what, expr.loc)
        shape = _constant_shape(lw, expr, what)
        ty = sig.return_type
        element = storage_type(ty.dtype, expr.loc)
        nbytes = ty.dtype.bitwidth // 8
        for n in shape:
            nbytes *= n
        if kind == "local" and context.gpu:
            space = ir.Attribute.parse("#gpu.address_space<workgroup>")
            offset = context.take_shared(nbytes)
            view = memref.ViewOp(ir.MemRefType.get(list(shape), element, memory_space=space),
                                 context.shared_base, const_index(offset), []).result
            value = memref.MemorySpaceCastOp(ir.MemRefType.get(list(shape), element),
                                             view).result
        elif kind == "local":
            # CPU: at the function's top, which cpu_groups.py makes the
            # work-group's (one array per group)
            with ir.InsertionPoint.at_block_begin(lw.entry_block):
                value = memref.AllocaOp(ir.MemRefType.get(list(shape), element), [], []).result
                return ArrayValue(memref.CastOp(memref_type(ty), value).result, ty)
        elif context.gpu:
            with ir.InsertionPoint.at_block_begin(lw.entry_block):
                value = memref.AllocaOp(ir.MemRefType.get(list(shape), element), [], []).result
        else:
            # CPU private arrays: the item's own buffer, a view of it;
            # cpu_groups.py makes it a slice per item of a buffer of the group
            with ir.InsertionPoint.at_block_begin(lw.entry_block):
                raw = memref.AllocaOp(ir.MemRefType.get([max(nbytes, 1)],
                                                        ir.IntegerType.get_signless(8)),
                                      [], []).result
            view = memref.ViewOp(ir.MemRefType.get(list(shape), element), raw, const_index(0),
                                 [])
            context.private_arrays.append((view, max(nbytes, 1)))
            value = view.result
        return ArrayValue(memref.CastOp(memref_type(ty), value).result, ty)
    return rule


for _kind, _fn in ARRAY_MAKERS.items():
    call_rules.register(_fn)(_array_rule(_kind))


# -- atomics --------------------------------------------------------------------

def _indices(lw, index, index_ty) -> list:
    if isinstance(index, TupleValue):
        return [arith.IndexCastOp(ir.IndexType.get(), cast(v, t, types.intp)).result
                for v, t in zip(index.items, index.type.types)]
    return [arith.IndexCastOp(ir.IndexType.get(), cast(index, index_ty, types.intp)).result]


def _atomic_rule(op: str):
    def rule(lw, args, sig, expr):
        _context(lw, f"atomic.{op}()", expr.loc)
        array, index = args[0], args[1]
        dtype = sig.args[0].dtype
        if dtype not in ATOMIC_TYPES:
            raise KernelConstructError(
                f"atomic.{op}() on an array of {dtype} (atomics take arrays of int32, int64, "
                "float32 or float64)", expr.loc)
        indices = _indices(lw, index, sig.args[1])
        values = [cast(v, t, dtype) for v, t in zip(args[2:], sig.args[2:])]
        is_float = isinstance(dtype, types.Float)
        if op == "cas":
            return _compare_exchange(lw, array, indices, values[0], values[1])
        value = values[0]
        if op == "sub":
            value = arith.NegFOp(value).result if is_float else \
                arith.SubIOp(const(dtype, 0), value).result
        kind = {"add": "addf" if is_float else "addi", "sub": "addf" if is_float else "addi",
                "min": "minimumf" if is_float else "mins",
                "max": "maximumf" if is_float else "maxs",
                "exchange": "assign", "exch": "assign"}[op]
        return memref.AtomicRMWOp(getattr(arith.AtomicRMWKind, kind), value, array.memref,
                                  indices).result
    return rule


def _compare_exchange(lw, array: ArrayValue, indices, expected, new):
    element = ir.MemRefType(array.memref.type).element_type
    bits = ir.IntegerType.get_signless(array.type.dtype.bitwidth)
    marker = _declare_marker(lw.mlower.module, array.memref.type, len(indices), bits)
    found = func.CallOp([bits], marker, [array.memref, *indices, _to_bits(expected, bits),
                                         _to_bits(new, bits)]).result
    return _from_bits(found, element)


for _name, _fn in ATOMIC_OPS.items():
    call_rules.register(_fn)(_atomic_rule(_name))


# -- group collectives and shuffles -------------------------------------------------

def _combine(op: str, a, b, dtype):
    is_float = isinstance(dtype, types.Float)
    if op == "add":
        return (arith.AddFOp if is_float else arith.AddIOp)(a, b).result
    if is_float:   # NaN-propagating, as np.min / np.max
        return (arith.MinimumFOp if op == "min" else arith.MaximumFOp)(a, b).result
    signed = getattr(dtype, "signed", False)
    if op == "min":
        return (arith.MinSIOp if signed else arith.MinUIOp)(a, b).result
    return (arith.MaxSIOp if signed else arith.MaxUIOp)(a, b).result


def _group_rule(name: str):
    def rule(lw, args, sig, expr):
        context = _context(lw, f"group.{name}()", expr.loc)
        dtype = sig.args[0]
        value = cast(args[0], sig.args[0], dtype)
        if isinstance(dtype, types.Boolean) or isinstance(dtype, types.Complex):
            raise KernelConstructError(f"group.{name}() of {dtype} values", expr.loc)
        if name.startswith("shuffle"):
            context.shuffles.append(expr.loc)
            context.barriers.append(expr.loc)      # all items of the warp take part
            return shuffle(lw, context, name[len("shuffle_"):], value, args[1], sig.args[1])
        context.barriers.append(expr.loc)
        return _collective(lw, context, name, value, dtype, args[1:], sig.args[1:])
    return rule


def exchange_buffer(lw, context, element: ir.Type) -> ir.Value:
    """A slot per work-item of the group: GPU shared memory; on the CPU, an
    array of the function's (the group's, with cpu_groups.py)."""
    if context.gpu:
        space = ir.Attribute.parse("#gpu.address_space<workgroup>")
        width = element.width if isinstance(element, (ir.IntegerType, ir.FloatType)) else 64
        offset = context.take_shared(MAX_GROUP_ITEMS * max(width // 8, 1))
        return memref.ViewOp(ir.MemRefType.get([MAX_GROUP_ITEMS], element, memory_space=space),
                             context.shared_base, const_index(offset), []).result
    with ir.InsertionPoint.at_block_begin(lw.entry_block):
        return memref.AllocaOp(ir.MemRefType.get([MAX_GROUP_ITEMS], element), [], []).result


def _kept(lw, value):
    """A loader of `value` valid after a barrier (a variable slot)."""
    with ir.InsertionPoint.at_block_begin(lw.entry_block):
        slot = memref.AllocaOp(ir.MemRefType.get([], value.type), [], []).result
    memref.StoreOp(value, slot, [])
    return lambda: memref.LoadOp(slot, []).result


def _across_barrier(lw, value):
    """`value` after a barrier (that lets the exchange buffer be used
    again): kept in a variable slot, which cpu_groups.py gives each item."""
    with ir.InsertionPoint.at_block_begin(lw.entry_block):
        slot = memref.AllocaOp(ir.MemRefType.get([], value.type), [], []).result
    memref.StoreOp(value, slot, [])
    emit_barrier(lw)
    return memref.LoadOp(slot, []).result


def _collective(lw, context, name, value, dtype, rest, rest_types):
    """Every item's value through its slot of an exchange buffer, between
    barriers; a reduction folds the slots in order of flattened local id in
    every item (the same bits in each, on either target)."""
    slots = exchange_buffer(lw, context, value.type)
    flat, count = flat_local(context)
    memref.StoreOp(value, slots, [flat])
    if name == "broadcast":
        source = _kept(lw, arith.IndexCastOp(ir.IndexType.get(),
                                             cast(rest[0], rest_types[0], types.intp)).result)
    emit_barrier(lw)
    flat, count = flat_local(context)     # values of this side of the barrier
    if name == "broadcast":
        result = memref.LoadOp(slots, [source()]).result
    else:
        first = memref.LoadOp(slots, [const_index(0)]).result
        loop = scf.ForOp(const_index(1), count, const_index(1), [first])
        with ir.InsertionPoint(loop.body):
            other = memref.LoadOp(slots, [loop.induction_variable]).result
            scf.YieldOp([_combine(name[len("reduce_"):], loop.inner_iter_args[0], other,
                                  dtype)])
        result = loop.results[0]
    return _across_barrier(lw, result)


def shuffle(lw, context, mode: str, value, lane, lane_ty):
    """gpu.shuffle within warps of 32 (flattened local ids); a lane outside
    the warp gives the item's own value. CPU: through an exchange buffer."""
    if not context.gpu:
        return _cpu_shuffle(lw, context, mode, value, lane, lane_ty)
    i32 = ir.IntegerType.get_signless(32)
    ty = value.type
    narrow = isinstance(ty, ir.IntegerType) and ty.width < 32
    if narrow:
        value = arith.ExtSIOp(i32, value).result
    # The source lane is computed here and read with an idx shuffle, whatever
    # the mode: shfl.sync reads only a lane number's low 5 bits (idx 40 would
    # be lane 8), and gpu.shuffle's `up` with a width below 32 clamps at the
    # top of the warp (every lane of a 16-lane warp would read its own value).
    # The width is the warp's lanes that exist: a group of 48 items has a last
    # warp of 16, and shfl.sync's mask must not name the missing lanes.
    flat, count = flat_local(context)
    warp = const_index(api.WARP_SIZE)
    own_lane = arith.RemUIOp(flat, warp).result
    lanes = arith.MinUIOp(warp, arith.SubIOp(count, arith.SubIOp(flat, own_lane).result).result)
    amount = arith.IndexCastOp(ir.IndexType.get(), cast(lane, lane_ty, types.int64)).result
    source = _source_lane(mode, own_lane, amount)     # below 0: a huge index
    inside = cmpi("ult", source, lanes.result)
    read = arith.IndexCastOp(i32, select(inside, source, own_lane)).result
    width = arith.IndexCastOp(i32, lanes.result).result
    op = gpu.ShuffleOp(value, read, width, gpu.ShuffleMode.IDX)
    result = select(inside, op.shuffleResult, value)
    return arith.TruncIOp(ty, result).result if narrow else result


for _name in GROUP_OPS:
    call_rules.register(GROUP_OPS[_name])(_group_rule(_name))


def _source_lane(mode: str, own_lane, amount):
    """The lane a shuffle reads (an index; below 0 wraps to a huge value)."""
    if mode == "idx":
        return amount
    if mode == "down":
        return arith.AddIOp(own_lane, amount).result
    if mode == "up":
        return arith.SubIOp(own_lane, amount).result
    return arith.XOrIOp(own_lane, amount).result


def _cpu_shuffle(lw, context, mode: str, value, lane, lane_ty):
    """The source lane as gpu.shuffle computes it, read from the exchange
    buffer between barriers; outside the warp (or the group): the own value."""
    slots = exchange_buffer(lw, context, value.type)
    lanes = exchange_buffer(lw, context, ir.IndexType.get())
    flat, count = flat_local(context)
    memref.StoreOp(value, slots, [flat])
    memref.StoreOp(arith.IndexCastOp(ir.IndexType.get(), cast(lane, lane_ty, types.int64)).result,
                   lanes, [flat])
    emit_barrier(lw)
    flat, count = flat_local(context)     # values of this side of the barrier
    amount = memref.LoadOp(lanes, [flat]).result
    warp = const_index(api.WARP_SIZE)
    own_lane = arith.RemUIOp(flat, warp).result
    base = arith.SubIOp(flat, own_lane).result
    source = _source_lane(mode, own_lane, amount)
    valid = arith.AndIOp(cmpi("ult", source, warp),
                         cmpi("ult", arith.AddIOp(base, source).result, count)).result
    position = select(valid, arith.AddIOp(base, source).result, flat)
    result = memref.LoadOp(slots, [position]).result
    own = memref.LoadOp(slots, [flat]).result
    result = select(valid, result, own)
    return _across_barrier(lw, result)
