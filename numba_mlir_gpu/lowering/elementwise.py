"""NumPy functions that build a new array element by element, with NumPy
broadcasting: np.where(cond, x, y), a.astype(dtype), np.clip(a, lo, hi).

Numba implements these in Python with constructs we do not lower
(np.broadcast_shapes, np.ndindex); here each is one parallel loop over the
output (a kernel on the GPU).
"""
from __future__ import annotations

import numpy as np
from numba.core import types
from numba.np.arrayobj import _as_layout_array_intrinsic

from .._mlir import arith, ir
from .arrays import allocate, load_element, shape_of, store_element
from .build import cmpi, const_index, select
from .casts import cast, truth
from .errors import UnsupportedConstructError
from .loops import parallel_for
from .mathlib import _less
from .registry import call_rules, method_rules
from .values import ArrayValue


class Broadcast:
    """Operands (arrays and scalars) broadcast to one output shape, as NumPy:
    aligned on their last dimension; extents equal, or 1 (repeated)."""

    def __init__(self, lw, operands: list, ndim: int):
        self.operands = operands
        arrays = [v for v in operands if isinstance(v, ArrayValue)]
        self.extents = []
        for d in range(ndim):
            sizes = [shape_of(a)[d - (ndim - a.type.ndim)] for a in arrays
                     if d >= ndim - a.type.ndim]
            extent = const_index(1)
            for size in sizes:
                extent = select(cmpi("eq", extent, const_index(1)), size, extent)
            mismatch = None
            for size in sizes:
                bad = arith.AndIOp(cmpi("ne", size, extent),
                                   cmpi("ne", size, const_index(1))).result
                mismatch = bad if mismatch is None else arith.OrIOp(mismatch, bad).result
            if mismatch is not None:
                lw.errors.raise_if(lw, mismatch, lw.errors.code(
                    ValueError, ("shape mismatch: objects cannot be broadcast to a single shape",)))
            self.extents.append(extent)

    def load(self, operand, indices: list) -> ir.Value:
        """The operand's element for output `indices` (a scalar is itself)."""
        if not isinstance(operand, ArrayValue):
            return operand
        shape = shape_of(operand)
        own = indices[len(indices) - operand.type.ndim:]
        # On a mismatch (an error once the statement ends) stay in bounds.
        own = [select(cmpi("ult", i, n), i, const_index(0)) for i, n in zip(own, shape)]
        return load_element(operand, own)


def _elementwise(lw, result_ty, operands: list, element) -> ArrayValue:
    """A new array of `result_ty`: element(values of the operands) at each index."""
    shape = Broadcast(lw, operands, result_ty.ndim)
    out = allocate(lw, result_ty, shape.extents)

    def body(indices):
        store_element(element([shape.load(v, indices) for v in operands]), out, indices)
    parallel_for(lw, shape.extents, body)
    return out


@call_rules.register(np.where)
def numpy_where(lw, args, sig, expr):
    result_ty = types.unliteral(sig.return_type)
    if len(args) == 1:
        from .reductions import nonzero
        return nonzero(lw, args, sig, expr)
    if len(args) != 3 or not isinstance(result_ty, types.Array):
        raise UnsupportedConstructError(
            f"np.where with {len(args)} argument(s) of {', '.join(map(str, sig.args))} "
            "(one array, or three with at least one array, are supported)", expr.loc)
    cond_ty, x_ty, y_ty = (_element_type(t) for t in sig.args)
    dtype = result_ty.dtype

    def element(values):
        c, x, y = values
        return select(truth(c, cond_ty), cast(x, x_ty, dtype), cast(y, y_ty, dtype))
    return _elementwise(lw, result_ty, args, element)


@method_rules.register((types.Array, "astype"))
def astype(lw, args, sig, expr):
    source = args[0]
    result_ty = types.unliteral(sig.return_type)
    if result_ty.layout != "C":
        raise UnsupportedConstructError(f".astype() returning {result_ty}", expr.loc)
    fromty = source.type.dtype
    return _elementwise(lw, result_ty, [source],
                        lambda values: cast(values[0], fromty, result_ty.dtype))


def _clip_operand(value, ty):
    return None if isinstance(types.unliteral(ty), (types.NoneType, types.Omitted)) else value


@call_rules.register(np.clip)
def numpy_clip(lw, args, sig, expr):
    """np.clip(a, a_min, a_max) as Numba: min(max(a, a_min), a_max) with
    Python's min/max (a NaN in `a` is kept, a NaN bound is ignored)."""
    if len(args) > 3 or expr.kws or not isinstance(args[0], ArrayValue):
        raise UnsupportedConstructError("np.clip other than np.clip(array, a_min, a_max)",
                                        expr.loc)
    result_ty = types.unliteral(sig.return_type)
    bounds = [(_clip_operand(v, t), _element_type(t)) for v, t in zip(args[1:], sig.args[1:])]
    if all(v is None for v, _ in bounds) or not isinstance(result_ty, types.Array):
        raise UnsupportedConstructError("np.clip without bounds", expr.loc)
    a_ty = args[0].type.dtype
    common = lw.mlower.typingctx.unify_types(a_ty, *(t for v, t in bounds if v is not None))
    operands = [args[0]] + [v for v, _ in bounds if v is not None]

    def element(values):
        x = cast(values[0], a_ty, common)
        rest = iter(values[1:])
        for (bound, ty), largest in zip(bounds, (True, False)):
            if bound is None:
                continue
            b = cast(next(rest), ty, common)
            # max(x, lo) keeps x unless lo > x; min(x, hi) keeps x unless hi < x.
            replace = _less(x, b, common) if largest else _less(b, x, common)
            x = select(replace, b, x)
        return cast(x, common, result_ty.dtype)
    return _elementwise(lw, result_ty, operands, element)


def _element_type(ty):
    ty = types.unliteral(ty)
    return ty.dtype if isinstance(ty, types.Array) else ty


def inplace_binop(lw, expr) -> ArrayValue:
    """`a op= b` on an array `a`: `b` (an array or a scalar) is broadcast to
    `a`'s shape, each element computed with the scalar operator Numba types
    for the two dtypes and stored back in `a`'s dtype."""
    target = lw.read(expr.lhs)
    other, other_ty = lw.read(expr.rhs), _element_type(lw.typeof(expr.rhs.name))
    dtype = target.type.dtype
    fn = expr.immutable_fn
    sig = lw.mlower.typingctx.resolve_function_type(fn, (dtype, other_ty), {})
    if sig is None or not isinstance(target, ArrayValue):
        raise UnsupportedConstructError(
            f"the in-place operator {expr.fn.__name__} on {lw.typeof(expr.lhs.name)} and "
            f"{lw.typeof(expr.rhs.name)}", expr.loc)
    shape = Broadcast(lw, [target, other], target.type.ndim)
    mismatch = None
    for extent, own in zip(shape.extents, shape_of(target)):
        bad = cmpi("ne", extent, own)
        mismatch = bad if mismatch is None else arith.OrIOp(mismatch, bad).result
    if mismatch is not None:
        lw.errors.raise_if(lw, mismatch, lw.errors.code(
            ValueError, ("non-broadcastable output operand",)))
    extents = shape_of(target)

    def body(indices):
        x = cast(load_element(target, indices), dtype, sig.args[0])
        y = cast(shape.load(other, indices), other_ty, sig.args[1])
        result = lw.binop(fn, x, y, sig, expr)
        store_element(cast(result, sig.return_type, dtype), target, indices)
    parallel_for(lw, extents, body)
    return target


def _as_layout(lw, args, sig, expr):
    """Numba's `_as_layout_array_intrinsic(a, 'C')` (np.ascontiguousarray): a
    new C-ordered array filled by a parallel copy. Fortran-ordered results
    (np.asfortranarray, array expressions on Fortran-ordered arrays) would be
    views of a transposed buffer, which buffer deallocation clones through a
    runtime library we do not load: refused."""
    source = args[0]
    result_ty = types.unliteral(sig.return_type)
    if not isinstance(source, ArrayValue) or result_ty.layout != "C":
        raise UnsupportedConstructError(
            f"creating a {result_ty.layout}-ordered array ({result_ty}), e.g. np.asfortranarray "
            "or an array expression on Fortran-ordered arrays", expr.loc)
    extents = shape_of(source)
    out = allocate(lw, result_ty, extents)

    def body(indices):
        store_element(load_element(source, indices), out, indices)
    parallel_for(lw, extents, body)
    return out


call_rules.register(_as_layout_array_intrinsic)(_as_layout)
