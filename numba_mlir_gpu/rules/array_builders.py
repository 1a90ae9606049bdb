"""NumPy functions that build a new array element by element, with NumPy
broadcasting (lowering/broadcast.py): np.where(cond, x, y), a.astype(dtype),
np.clip(a, lo, hi), and layout changes (np.ascontiguousarray,
np.asfortranarray).

Numba implements these in Python with constructs we do not lower
(np.broadcast_shapes, np.ndindex); here each is one parallel loop over the
output (a kernel on the GPU).
"""
from __future__ import annotations

import numpy as np
from numba.core import ir as nir
from numba.core import types
from numba.core.ir_utils import get_definition, guard
from numba.np.arrayobj import _as_layout_array_intrinsic
from numba.np.unsafe.ndarray import empty_inferred

from ..lowering.argument_writes import called_object
from ..lowering.arrays import allocate, copy_array, shape_of, store_element
from ..lowering.broadcast import SHAPE_MISMATCH, broadcast_element, broadcast_shape
from ..lowering.build import less_than, select
from ..lowering.casts import cast, truth
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import parallel_for
from ..lowering.registry import call_rules, method_rules
from ..lowering.types import element_type
from ..lowering.values import ArrayValue


def _elementwise(lw, result_ty, operands: list, element) -> ArrayValue:
    """A new array of `result_ty`: element(values of the operands) at each index."""
    arrays = [v for v in operands if isinstance(v, ArrayValue)]
    extents = broadcast_shape(lw, arrays, result_ty.ndim, SHAPE_MISMATCH)
    out = allocate(lw, result_ty, extents)

    def body(indices):
        store_element(element([broadcast_element(v, indices) for v in operands]), out, indices)
    parallel_for(lw, extents, body)
    return out


@call_rules.register(np.where)
def numpy_where(lw, args, sig, expr):
    result_ty = types.unliteral(sig.return_type)
    if len(args) == 1:        # np.nonzero's rule (rules/scans.py)
        return call_rules.get(np.nonzero)(lw, args, sig, expr)
    if len(args) != 3 or not isinstance(result_ty, types.Array):
        raise UnsupportedConstructError(
            f"np.where with {len(args)} argument(s) of {', '.join(map(str, sig.args))} "
            "(one array, or three with at least one array, are supported)", expr.loc)
    cond_ty, x_ty, y_ty = (element_type(t) for t in sig.args)
    dtype = result_ty.dtype

    def element(values):
        c, x, y = values
        return select(truth(c, cond_ty), cast(x, x_ty, dtype), cast(y, y_ty, dtype))
    return _elementwise(lw, result_ty, args, element)


@method_rules.register((types.Array, "astype"))
def astype(lw, args, sig, expr):
    source = args[0]
    result_ty = types.unliteral(sig.return_type)
    if result_ty.layout not in "CF":
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
    if len(args) != 3 or not isinstance(args[0], ArrayValue):
        raise UnsupportedConstructError("np.clip other than np.clip(array, a_min, a_max)",
                                        expr.loc)
    result_ty = types.unliteral(sig.return_type)
    bounds = [(_clip_operand(v, t), element_type(t)) for v, t in zip(args[1:], sig.args[1:])]
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
            replace = less_than(x, b, common) if largest else less_than(b, x, common)
            x = select(replace, b, x)
        return cast(x, common, result_ty.dtype)
    return _elementwise(lw, result_ty, operands, element)


@call_rules.register(_as_layout_array_intrinsic, np.ascontiguousarray, np.asfortranarray)
def as_layout(lw, args, sig, expr):
    """np.ascontiguousarray / np.asfortranarray (Numba's
    _as_layout_array_intrinsic), as Numba does: the array itself when its type
    already has the layout asked for (or it is 1-d and contiguous), else a
    copy in that layout. Numba checks 'A'-layout arrays at run time and may
    return them as they are; here they are always copied."""
    source = args[0]
    source_ty, result_ty = types.unliteral(sig.args[0]), types.unliteral(sig.return_type)
    if not isinstance(source, ArrayValue):
        raise UnsupportedConstructError(f"changing the layout of {source_ty}", expr.loc)
    if source_ty.layout == result_ty.layout or (source_ty.ndim == 1 and source_ty.layout in "CF"):
        return source
    if _fresh_empty(lw, expr.args[0]):
        return allocate(lw, result_ty, shape_of(source))
    return copy_array(lw, source, result_ty)


def _fresh_empty(lw, var) -> bool:
    """`var` holds an array that np.empty just made and nothing else reads:
    Numba's parfor pass allocates Fortran-ordered results as
    np.asfortranarray(np.empty(shape)), where a copy would copy nothing."""
    definition = guard(get_definition, lw.func_ir, var)
    if not (isinstance(definition, nir.Expr) and definition.op == "call"
            and called_object(lw.func_ir, definition) in (np.empty, empty_inferred)):
        return False
    mentions = sum(v.name == var.name for block in lw.func_ir.blocks.values()
                   for stmt in block.body for v in stmt.list_vars())
    return mentions == 2        # its definition and this call
