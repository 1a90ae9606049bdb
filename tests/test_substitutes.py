"""Stand-ins for NumPy calls (lowering/substitutes.py): typed as Numba types
the call, without compiling Numba's implementation."""
import numba
import numpy as np
import pytest

from numba_mlir_gpu.frontend.typed_ir import typed_ir
from numba_mlir_gpu.lowering.substitutes import sum_with_axis

from .support import check

RNG = np.random.default_rng(5)


def sum_axis(x):
    return np.sum(x, axis=-1)


def sum_axis_dtype(x):
    return np.sum(x, 0, np.float32)


def sum_axis_keywords(x):
    return np.sum(dtype=np.int64, a=x, axis=0)


def sum_whole(x):
    return np.sum(x)


_DTYPES = [np.bool_, np.int8, np.int32, np.uint16, np.uint64, np.int64, np.float32, np.float64]
_SHAPES = [(7,), (3, 5), (2, 3, 4)]


# every dtype with two of the shapes, every shape with five or more dtypes (each
# case compiles three functions through ours and Numba; the full product took
# a sixth of CI's time)
@pytest.mark.parametrize("dtype, shape", [(d, _SHAPES[(i + k) % 3]) for i, d in enumerate(_DTYPES)
                                          for k in (0, 1)])
def test_types_and_values_are_numbas(dtype, shape):
    x = (RNG.random(shape) * 100).astype(dtype)
    for fn in (sum_axis, sum_axis_dtype, sum_axis_keywords):
        got = check(fn, x)
        assert np.asarray(got).dtype == np.asarray(numba.njit(fn)(x)).dtype


def _callees(fn, x) -> set:
    from numba.core.registry import cpu_target
    state = typed_ir(fn, (numba.typeof(x),), cpu_target.typing_context, cpu_target.target_context)
    return {getattr(v.value, "value", None) for b in state.func_ir.blocks.values()
            for v in b.find_insts(numba.core.ir.Assign)
            if isinstance(v.value, numba.core.ir.Global)}


def test_only_calls_with_an_axis_are_replaced():
    x = RNG.random((3, 4))
    assert sum_with_axis in _callees(sum_axis, x)
    assert sum_with_axis not in _callees(sum_whole, x)
    check(sum_whole, x)


def test_the_stand_in_is_not_called_from_python():
    with pytest.raises(NotImplementedError):
        sum_with_axis(np.ones(3), 0)
