"""Array reductions in prange loops (`acc += arr`, `acc *= arr` with `acc`
an array defined before the loop), deterministically.

The iteration space is cut into contiguous chunks; each chunk runs on a
private copy of the array, started at the operator's identity, and a
parallel loop over the elements then folds the copies into the array in
chunk order. On the GPU the chunks are the threads of one kernel (each runs
its chunk sequentially; the copies live in device memory) and the fold is a
second kernel, so the result is the same bits as on the CPU: correct and
deterministic, but only CHUNKS-way parallel.
"""
from __future__ import annotations

import operator

from numba.core import ir as nir
from numba.core import types

from .._mlir import arith, ir, memref, scf
from .arrays import fill, load_element, shape_of, store_element
from .build import const_index
from .errors import UnsupportedConstructError
from .loops import delinearize, flat_parallel, parallel_for, product
from .parfors import Reduction
from .types import memref_type
from .values import ArrayValue

# Private copies, each folding one contiguous chunk of the iterations.
CHUNKS = 16

_OPERATORS = {operator.iadd: operator.add, operator.add: operator.add,
              operator.isub: operator.add, operator.sub: operator.add,
              operator.imul: operator.mul, operator.mul: operator.mul}


def array_reduction_names(lw, parfor) -> list[str]:
    return [name for name in parfor.redvars
            if isinstance(types.unliteral(lw.typeof(name)), types.Array)]


def lower_array_reductions(lw, parfor, nest, body_for) -> None:
    """`body_for(captured)` makes the BodyLowering of `parfor` with the
    given captured values; the array reduction variables are rebound to each
    chunk's private copy."""
    names = parfor.redvars
    reductions = []
    for name in names:
        ty = types.unliteral(lw.typeof(name))
        op = _OPERATORS.get(parfor.reddict[name].redop)
        if op is None or not isinstance(ty, types.Array) or \
                isinstance(ty.dtype, types.Boolean):
            raise UnsupportedConstructError(
                f"the reduction of '{_user_name(name)}' ({ty}) mixed with others or with an operator "
                "other than += -= *=", parfor.loc)
        array = lw.read(nir.Var(None, name, parfor.loc))
        reductions.append((name, array, Reduction(name, ty.dtype, op, 0 if op is operator.add
                                                   else 1)))
    from .parfors import capture
    captured = capture(lw, parfor, set(nest.vars) | set(names))
    total = product(nest.trips)
    chunk = arith.CeilDivUIOp(total, const_index(CHUNKS)).result
    privates = [_private_copies(array) for _, array, _ in reductions]

    def worker(t):
        views = {}
        for (name, array, red), private in zip(reductions, privates):
            view = _chunk_view(private, array, t)
            fill(lw, view, red.identity_value())
            views[name] = view
        lo = arith.MinUIOp(arith.MulIOp(t, chunk).result, total).result
        hi = arith.MinUIOp(arith.AddIOp(lo, chunk).result, total).result
        loop = scf.ForOp(lo, hi, const_index(1))
        with ir.InsertionPoint(loop.body):
            body = body_for({**captured, **views})
            body(delinearize(loop.induction_variable, nest.trips), [])
            scf.YieldOp([])
    lw.parallel_depth += 1
    try:
        flat_parallel(const_index(CHUNKS), worker)
    finally:
        lw.parallel_depth -= 1
    for (name, array, red), private in zip(reductions, privates):
        _fold_copies(lw, array, private, red)       # the copies are freed by buffer deallocation


def _user_name(name: str) -> str:
    """The source variable of an SSA-versioned name ('acc.2' -> 'acc')."""
    return name if name.startswith("$") else name.partition(".")[0]


def _private_copies(array: ArrayValue) -> ir.Value:
    """A C-ordered buffer of CHUNKS copies of `array`'s shape."""
    mty = ir.MemRefType.get([CHUNKS] + [ir.ShapedType.get_dynamic_size()] * array.type.ndim,
                            ir.MemRefType(array.memref.type).element_type)
    return memref.AllocOp(mty, shape_of(array), []).result


def _chunk_view(private: ir.Value, array: ArrayValue, t: ir.Value) -> ArrayValue:
    """private[t] as an array of `array`'s type (a strided view)."""
    ndim = array.type.ndim
    dynamic = ir.ShapedType.get_dynamic_size()
    view_type = ir.MemRefType.get(
        [dynamic] * ndim, ir.MemRefType(private.type).element_type,
        ir.StridedLayoutAttr.get(dynamic, [dynamic] * (ndim - 1) + [1]))
    view = memref.SubViewOp(view_type, private, [t], shape_of(array), [],
                            [dynamic] + [0] * ndim, [1] + [dynamic] * ndim, [1] * (ndim + 1))
    # Rank-reducing subview (the leading unit dimension is dropped), then
    # the memref type of an 'A'-layout array.
    ty = array.type.copy(layout="A")
    return ArrayValue(memref.CastOp(memref_type(ty), view.result).result, ty)


def _fold_copies(lw, array: ArrayValue, private: ir.Value, red: Reduction) -> None:
    """array[idx] = op(array[idx], private[0][idx], ..., private[CHUNKS-1][idx])."""
    def body(indices):
        loop = scf.ForOp(const_index(0), const_index(CHUNKS), const_index(1),
                         [load_element(array, indices)])
        with ir.InsertionPoint(loop.body):
            value = memref.LoadOp(private, [loop.induction_variable] + indices).result
            scf.YieldOp([red.combine(loop.inner_iter_args[0], value)])
        store_element(loop.results[0], array, indices)
    parallel_for(lw, shape_of(array), body)
