"""Typing of the stand-ins of lowering/substitutes.py: the result types
Numba's own implementations would give, from Numba's own helpers (their
rules change between Numba versions); and their lowering by Numba, for host
code that Numba lowers (fallback.py): the NumPy function itself."""
from __future__ import annotations

import numpy as np
from numba.core import types
from numba.core.imputils import lower_builtin
from numba.core.typing import signature
from numba.core.typing.templates import CallableTemplate, infer_global
from numba.np.arraymath import get_ret_dtype_if_any

from ..lowering.substitutes import sum_with_axis


def _none(ty) -> bool:
    return ty is None or isinstance(ty, (types.NoneType, types.Omitted))


@infer_global(sum_with_axis)
class SumWithAxis(CallableTemplate):
    """As numba.np.arraymath.array_sum: an array with an integer axis gives
    an array of one dimension less (a scalar for 1-d) of the element type
    get_ret_dtype_if_any says; anything else is typed as np.sum itself."""

    def generic(self):
        def typer(a, axis=None, dtype=None):
            if not (_none(dtype) or isinstance(dtype, (types.DType, types.NumberClass))):
                return None
            if isinstance(a, types.Array) and isinstance(axis, types.Integer):
                element = get_ret_dtype_if_any(a, types.none if _none(dtype) else dtype)
                return element if a.ndim <= 1 else types.Array(element, a.ndim - 1, "C")
            given = [t for t in (a, axis, dtype) if t is not None]
            numpy_sum = self.context.resolve_value_type(np.sum)
            sig = self.context.resolve_function_type(numpy_sum, given, {})
            return None if sig is None else sig.return_type
        return typer


_SUMS = {
    (True, False, False): lambda a: np.sum(a),
    (True, True, False): lambda a, axis: np.sum(a, axis=axis),
    (True, False, True): lambda a, dtype: np.sum(a, dtype=dtype),
    (True, True, True): lambda a, axis, dtype: np.sum(a, axis=axis, dtype=dtype),
}


@lower_builtin(sum_with_axis, types.VarArg(types.Any))
def lower_sum_with_axis(context, builder, sig, args):
    """np.sum with the arguments given (an omitted one is left out)."""
    given = [i < len(sig.args) and not _none(sig.args[i]) for i in range(3)]
    kept = [i for i in range(len(sig.args)) if given[i]]
    impl = _SUMS[tuple(given)]
    return context.compile_internal(
        builder, impl, signature(sig.return_type, *[sig.args[i] for i in kept]),
        [args[i] for i in kept])
