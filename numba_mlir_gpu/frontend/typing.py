"""Typing of the stand-ins of lowering/substitutes.py: the result types
Numba's own implementations would give, from Numba's own helpers."""
from __future__ import annotations

from numba.core import types
from numba.core.typing.templates import CallableTemplate, infer_global
from numba.np.arraymath import get_accumulator_type, get_ret_dtype_if_any

from ..lowering.substitutes import sum_with_axis


def _none(ty) -> bool:
    return ty is None or isinstance(ty, (types.NoneType, types.Omitted))


@infer_global(sum_with_axis)
class SumWithAxis(CallableTemplate):
    """As numba.np.arraymath.array_sum: an array with an integer axis gives
    an array of one dimension less (a scalar for 1-d), of NumPy's
    accumulator type or `dtype`; a number gives a number."""

    def generic(self):
        def typer(a, axis=None, dtype=None):
            if not (_none(dtype) or isinstance(dtype, (types.DType, types.NumberClass))):
                return None
            if isinstance(a, (types.Number, types.Boolean)) and (
                    _none(axis) or isinstance(axis, types.Integer)):
                return get_accumulator_type(a) if _none(dtype) else dtype.dtype
            if isinstance(a, types.Array) and isinstance(axis, types.Integer):
                element = get_ret_dtype_if_any(a, types.none if _none(dtype) else dtype)
                return element if a.ndim <= 1 else types.Array(element, a.ndim - 1, "C")
            return None
        return typer
