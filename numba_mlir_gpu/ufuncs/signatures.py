"""Compiled signatures of a ufunc and the choice among them for a call.

A `Loop` is one signature: the element types of the inputs and outputs.
A call picks the first loop its inputs convert to, as NumPy picks among a
ufunc's `types`: an exact match first, then the first loop every input casts
to safely. A ufunc compiled lazily (no signatures given) compiles a loop for
the inputs' own types only when none of its loops fits so, as Numba's DUFunc
(NumPy looks among its loops first). Python numbers are "weak" (NEP 50): they take the kind of loop
they fit (an int fits any integer or float loop, a float any float loop).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from numba.core import sigutils, types
from numba.core.registry import cpu_target
from numba.np.numpy_support import as_dtype, from_dtype


@dataclass(frozen=True)
class Loop:
    inputs: tuple            # numba types (scalars; arrays for gufunc arguments)
    outputs: tuple

    @property
    def input_dtypes(self) -> tuple:
        return tuple(as_dtype(_element(t)) for t in self.inputs)

    @property
    def output_dtypes(self) -> tuple:
        return tuple(as_dtype(_element(t)) for t in self.outputs)

    def __str__(self) -> str:
        ins = ", ".join(str(t) for t in self.inputs)
        return f"({ins}) -> {', '.join(str(t) for t in self.outputs)}"


def _element(ty):
    return ty.dtype if isinstance(ty, types.Array) else ty


def parse(sig) -> tuple[tuple, Optional[types.Type]]:
    """(argument types, return type or None) of one Numba signature: a string
    ("float64(float64, float64)"), a Signature, or a tuple of types."""
    try:
        args, ret = sigutils.normalize_signature(sig)
    except (TypeError, ValueError, NameError, SyntaxError) as exc:
        raise TypeError(f"invalid signature {sig!r}: {exc}") from None
    return tuple(args), ret


# The type a Python number has when a ufunc compiles a loop for it lazily
# (as NumPy's `np.asarray(x).dtype`).
_PYTHON_NUMBERS = {bool: np.dtype(np.bool_), int: np.dtype(np.int64),
                   float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


def is_weak(value) -> bool:
    """Python numbers (not NumPy scalars): NEP 50's weak scalars."""
    return type(value) in _PYTHON_NUMBERS


def dtype_of(value) -> np.dtype:
    if type(value) in _PYTHON_NUMBERS:
        return _PYTHON_NUMBERS[type(value)]
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        dtype = np.asarray(value).dtype
    return np.dtype(dtype)


def _weak_fits(value, dtype: np.dtype) -> bool:
    kind = dtype.kind
    if type(value) is bool:
        return True
    if type(value) is int:
        if kind in "iu":
            info = np.iinfo(dtype)
            return info.min <= value <= info.max
        return kind in "fc"
    if type(value) is float:
        return kind in "fc"
    return kind == "c"


def match(loops: Sequence[Loop], values: Sequence, dtypes: Sequence[np.dtype]) -> Optional[Loop]:
    """The loop for inputs `values` of element types `dtypes`: exact match,
    else the first every input casts to safely (weak Python numbers by kind)."""
    for loop in loops:
        if tuple(loop.input_dtypes) == tuple(dtypes):
            return loop
    for loop in loops:
        if all(_weak_fits(v, want) if is_weak(v) else np.can_cast(have, want, "safe")
               for v, have, want in zip(values, dtypes, loop.input_dtypes)):
            return loop
    return None


def numba_types(dtypes: Sequence[np.dtype]) -> tuple:
    return tuple(from_dtype(d) for d in dtypes)


def infer_return_type(py_func, argtypes: tuple) -> types.Type:
    """The type `py_func` returns for scalar `argtypes`: Numba's type
    inference only (no code is made; our lowering compiles the body into the
    loops that call it)."""
    from ..frontend.typed_ir import typed_ir
    state = typed_ir(py_func, argtypes, cpu_target.typing_context, cpu_target.target_context)
    ret = state.return_type
    if not isinstance(ret, (types.Number, types.Boolean)):
        raise TypeError(f"{py_func.__name__}{argtypes} returns {ret}: a vectorize kernel must "
                        "return a number or a boolean")
    return ret
