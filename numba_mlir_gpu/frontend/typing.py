"""Typing of the stand-ins of lowering/substitutes.py: the result types
Numba's own implementations would give, from Numba's own helpers (their
rules change between Numba versions); and their lowering by Numba, for host
code that Numba lowers (fallback.py): the NumPy function itself. Also the
typing of np.matmul and of `@` on batches, which Numba lacks."""
from __future__ import annotations

import functools
import operator
from typing import Optional

import numpy as np
from numba.core import types
from numba.core.imputils import lower_builtin
from numba.core.typing import signature
from numba.core.typing.templates import AbstractTemplate, CallableTemplate, infer_global
from numba.np.arraymath import get_ret_dtype_if_any
from numba.np.numpy_support import as_dtype, from_dtype

from . import numba_fixes
from ..lowering.substitutes import matmul, sum_with_axis


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


# -- np.matmul (its stand-in), and `@` of 3-d arrays (batches of products) ---
# Numba types neither; inside our pipelines they follow NumPy (rules/linalg.py
# lowers them), while stock Numba keeps its own errors.

def matmul_type(a, b) -> Optional[types.Type]:
    """NumPy's result type of np.matmul(a, b) for numeric arrays of one to
    three dimensions: a 1-d operand is a vector, a 3-d one a batch."""
    if not all(isinstance(x, types.Array) and 1 <= x.ndim <= 3
               and isinstance(x.dtype, types.Number) for x in (a, b)):
        return None
    dtype = from_dtype(np.result_type(as_dtype(a.dtype), as_dtype(b.dtype)))
    ndim = max(a.ndim, b.ndim, 2) - 2 + (a.ndim >= 2) + (b.ndim >= 2)
    return types.Array(dtype, ndim, "C") if ndim else dtype


def _matmul_signature(args, kws, batched_only: bool):
    if kws or len(args) != 2 or (batched_only and not numba_fixes.active()):
        return None
    if batched_only and not any(isinstance(x, types.Array) and x.ndim == 3 for x in args):
        return None
    result = matmul_type(*args)
    return None if result is None else signature(result, *args)


@infer_global(matmul)
class NumpyMatmul(AbstractTemplate):
    def generic(self, args, kws):
        return _matmul_signature(args, kws, batched_only=False)


@infer_global(operator.matmul)
class BatchedMatmul(AbstractTemplate):
    def generic(self, args, kws):
        return _matmul_signature(args, kws, batched_only=True)


@lower_builtin(matmul, types.Array, types.Array)
@lower_builtin(operator.matmul, types.Array, types.Array)
def lower_matmul(context, builder, sig, args):
    """For host code Numba lowers (fallback.py): the products as loops."""
    out = sig.return_type
    dtype = out.dtype if isinstance(out, types.Array) else out
    impl = _matmul_loops(sig.args[0].ndim, sig.args[1].ndim, as_dtype(dtype).type)
    return context.compile_internal(builder, impl, sig, args)


@functools.lru_cache(maxsize=None)
def _matmul_loops(a_ndim: int, b_ndim: int, scalar: type):
    """np.matmul for operands of these dimensions, written as loops: a batch
    axis where either operand has one (a batch of one serves all), rows
    where `a` is a matrix, columns where `b` is."""
    batch = max(a_ndim, b_ndim) == 3
    a_index = ["pa"] * (a_ndim == 3) + ["i"] * (a_ndim >= 2) + ["k"]
    b_index = ["pb"] * (b_ndim == 3) + ["k"] + ["j"] * (b_ndim >= 2)
    out_index = ["p"] * batch + ["i"] * (a_ndim >= 2) + ["j"] * (b_ndim >= 2)
    lines = [
        "def matmul(a, b):",
        f"    ba = {'a.shape[0]' if a_ndim == 3 else 1}",
        f"    bb = {'b.shape[0]' if b_ndim == 3 else 1}",
        f"    m = {'a.shape[-2]' if a_ndim >= 2 else 1}",
        f"    n = {'b.shape[-1]' if b_ndim >= 2 else 1}",
        f"    depth = b.shape[{0 if b_ndim == 1 else b_ndim - 2}]",
        "    if a.shape[-1] != depth:",
        "        raise ValueError('matmul: the contracted dimensions differ')",
        "    if ba != bb and ba != 1 and bb != 1:",
        "        raise ValueError('matmul: the batch dimensions do not broadcast')",
        "    batch = bb if ba == 1 else ba",
        f"    out = np.empty(({', '.join(['batch'] * batch + ['m'] * (a_ndim >= 2) + ['n'] * (b_ndim >= 2))},), scalar)"
        if out_index else "    out = np.empty((1,), scalar)",
        "    for p in range(batch):",
        "        pa, pb = min(p, ba - 1), min(p, bb - 1)",
        "        for i in range(m):",
        "            for j in range(n):",
        "                acc = scalar(0)",
        "                for k in range(depth):",
        f"                    acc += scalar(a[{', '.join(a_index)}]) * scalar(b[{', '.join(b_index)}])",
        f"                out[{', '.join(out_index) or '0'}] = acc",
        f"    return out{'' if out_index else '[0]'}",
    ]
    namespace = {"np": np, "scalar": scalar}
    exec("\n".join(lines), namespace)
    return namespace["matmul"]
