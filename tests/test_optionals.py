"""Optional values (Numba's OptionalType) beyond the scalar variables of
test_optional.py: Optional arrays as variables assigned on several paths,
`is None` tests, callee parameters and results, entry results, their use as
arrays (TypeError "expected <type>, got None" when None, as Numba), in
array expressions and prange bodies; Optional arguments through explicit
signatures; the callee's Optional parameter type in its dispatcher's
signatures. Each case against Numba's own CPU njit; compile-only GPU code
for the loop cases; the GPU values where there is a GPU."""
import numba
import numpy as np
import pytest
from numba import prange, types

import numba_mlir_gpu

from .support import TARGETS, check, ours
from .test_codegen import all_ptx, compile_only


@numba.njit
def arr_expr(x, y):
    return x + y


def optional_array_argument(x, y):
    if y[0] > 0:
        z = None
    else:
        z = y
    return arr_expr(x, z)          # arr_expr compiled for (array, Optional(array))


def narrowed(x, flag):
    z = None
    if flag:
        z = x * 2.0
    if z is None:
        return -1.0
    if z is not None:
        return z.sum() + z[0] + z.shape[0] + len(z)
    return 0.0


def returned_variable(x, flag):
    z = None
    if flag:
        z = x * 2.0
    return z


def returned_from_statements(x, flag):
    if flag:
        return x + 1.0
    return None


@numba.njit
def maybe_array(x, flag):
    if flag:
        return x + 1.0
    return None


def optional_callee_result(x, flag):
    z = maybe_array(x, flag)
    if z is None:
        return np.zeros(2)
    return z * 3


def in_a_tuple(x, flag):
    z = None
    if flag:
        z = x + 1
    return 1, z


def argument_or_view(x, flag, view):
    z = None
    if flag:
        z = x[1:] if view else x
    return z


def reassigned_in_a_loop(x, n):
    total = 0.0
    z = None
    for i in range(n):
        if i % 3 == 0:
            z = None
        else:
            z = x * i          # a new array each iteration, the last one freed
        if z is not None:
            total += z[0] + z[-1]
    return total


def two_d(a, flag):
    z = None
    if flag:
        z = a.T
    if z is None:
        return a.sum()
    return (z * 2).sum()


def numpy_calls_and_iteration(a, flag):
    z = None
    if flag:
        z = a
    s = 0.0
    for v in z:
        s += v
    return s + np.sum(z) + np.max(z)


def written_through(a, flag):
    z = None
    if flag:
        z = a
    z[0] = 42.0
    return a


def none_used_as_array(x, flag):
    z = None
    if flag:
        z = x
    return x + z


def prange_reads_optional(a, b, flag):
    z = None
    if flag:
        z = b
    out = np.zeros_like(a)
    for i in prange(a.shape[0]):
        if z is not None:
            out[i] = a[i] + z[i]
        else:
            out[i] = a[i]
    return out


def array_expression(a, b, flag):
    z = None
    if flag:
        z = b
    return a * 2 + z


def optional_scalar_in_array_expression(x, y):
    if y > 0:
        z = None
    else:
        z = y
    return arr_expr(x, z)


@numba.njit
def running_sums(D, out=None):
    """The shape of tslearn's soft-DTW: the result is `out` when given, else
    a new array; each element adds its upper neighbour's."""
    if out is not None:
        acc = out
        out[...] = np.inf
    else:
        acc = np.full(D.shape, np.inf, dtype=D.dtype)
    for i in range(D.shape[0]):
        for j in range(D.shape[1]):
            acc[i, j] = D[i, j] + (acc[i - 1, j] if i != 0 else 0.0)
    return acc


def batched_running_sums(D):
    R = np.empty_like(D)
    for b in prange(D.shape[0]):
        running_sums(D[b], out=R[b])
    return R


X = np.arange(6.0)


@pytest.mark.parametrize("target", TARGETS)
def test_optional_array_variables(target):
    for flag in (True, False):
        check(narrowed, X, flag, target=target)
        check(returned_variable, X, flag, target=target)
        check(returned_from_statements, X, flag, target=target)
        check(optional_callee_result, X, flag, target=target)
        check(in_a_tuple, X, flag, target=target)
        check(two_d, np.arange(12.0).reshape(3, 4), flag, target=target)
        for view in (True, False):
            check(argument_or_view, X, flag, view, target=target)
    check(optional_array_argument, np.arange(6), X, target=target)
    check(reassigned_in_a_loop, X, 10, target=target)
    check(reassigned_in_a_loop, X, 1000, target=target)
    check(numpy_calls_and_iteration, X, True, target=target)
    check(written_through, X.copy(), True, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_optional_arrays_in_loops(target):
    for flag in (True, False):
        check(prange_reads_optional, X, X + 1, flag, target=target)
    check(array_expression, X, X + 1, True, target=target)
    check(optional_scalar_in_array_expression, np.arange(5), -1.2, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_callee_writing_an_optional_out_argument_in_a_prange_body(target):
    # few iterations with inner loops: a block per iteration, whose threads
    # may not each run the callee (it writes `out`); and its array variable,
    # undefined on one path, must not leave poison in the kernel
    D = np.random.default_rng(1).random((5, 10, 12)).astype(np.float32)
    check(batched_running_sums, D, target=target)


def test_kernel_of_an_array_variable_undefined_on_a_path_keeps_its_work():
    D = np.ones((5, 10, 12), np.float32)
    ptx = all_ptx(compile_only(batched_running_sums, D))
    # the running sums' additions (LLVM deleted them as undefined behaviour
    # when a poison pointer reached the kernel's deallocation checks)
    assert "add.f64" in ptx or "add.rn.f64" in ptx


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, args", [
    (none_used_as_array, (X, False)),
    (array_expression, (X, X + 1, False)),
    (numpy_calls_and_iteration, (X, False)),
    (written_through, (X.copy(), False)),
    (optional_array_argument, (np.arange(6), X + 1)),
])
def test_none_used_as_an_array_raises_numbas_type_error(target, fn, args):
    message = "expected array(float64, 1d, C), got None"
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        numba.njit(fn)(*args)
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ours(fn, target)(*args)


def test_callee_keeps_its_optional_parameter_types():
    """Numba's typing gives the callee an Optional parameter; the dispatcher
    records that signature when our pipeline compiles the caller too."""
    @numba.njit
    def callee(x, y):
        return x + y

    def caller(x, y):
        z = None if y[0] > 0 else y
        return callee(x, z)

    ours(caller, "cpu")(np.arange(3), -np.ones(3))
    (signature,) = callee.signatures
    assert isinstance(signature[1], types.Optional)
    assert isinstance(signature[1].type, types.Array)


def identity_of_numbers(a, b):
    return a is b, a is not b


@pytest.mark.parametrize("target", TARGETS)
def test_is_between_numbers_is_equality_of_one_type(target):
    for a, b in ((1, 1), (1, 2), (1.5, 1.5), (1, 1.0)):
        check(identity_of_numbers, a, b, target=target)


# -- explicit signatures: Optional arguments -------------------------------------

def add_unless_none(x, y):
    if y is None:
        return x
    return x + y


def accumulate_into(x, y):
    if y is None:
        return x
    y[0] += x
    return y[0]


def first(y):
    return y[0]


def first_of_rows(y):
    if y is None:
        return 0.0
    return y[0, 0] + y.shape[1]


@pytest.mark.parametrize("target", TARGETS)
def test_optional_arguments_of_explicit_signatures(target):
    def both(sig, fn):
        return numba.njit(sig)(fn), numba_mlir_gpu.njit(sig, target=target)(fn)

    ref, got = both("float64(float64, optional(float64))", add_unless_none)
    for y in (12.5, None):
        assert got(1.0, y) == ref(1.0, y)
    ref, got = both("float32(float32, optional(float32[:]))", accumulate_into)
    for y in (np.array([12.25], np.float32), None):
        theirs, mine = (None, None) if y is None else (y.copy(), y.copy())
        assert got(1.0, mine) == ref(1.0, theirs)
        if y is not None:
            np.testing.assert_array_equal(mine, theirs)      # written in place
    ref, got = both("(optional(int32[:]),)", first)
    y = np.array([0xabcd], np.int32)
    assert got(y) == ref(y)
    with pytest.raises(TypeError, match=r"expected array\(int32, 1d, A\), got None"):
        got(None)
    ref, got = both("(optional(float64[:, ::1]),)", first_of_rows)
    for y in (np.arange(6.0).reshape(2, 3), None):
        assert got(y) == ref(y)


def doubled_into(y, out):
    if y is None:
        out[:] = -1.0
        return
    for i in prange(out.shape[0]):
        out[i] = y[i] * 2.0


DOUBLED_SIGNATURE = "void(optional(float64[:]), float64[:])"


@pytest.mark.parametrize("target", TARGETS)
def test_optional_array_argument_read_in_a_prange_loop(target):
    ref = numba.njit(DOUBLED_SIGNATURE)(doubled_into)
    got = numba_mlir_gpu.njit(DOUBLED_SIGNATURE, target=target)(doubled_into)
    for y in (np.arange(5.0), None):
        expected, out = np.zeros(5), np.zeros(5)
        ref(y, expected)
        got(y, out)
        np.testing.assert_array_equal(out, expected)


def test_optional_array_argument_compiles_to_a_gpu_kernel():
    from numba_mlir_gpu.frontend.wrapper import CompileOnlyError
    fn = numba_mlir_gpu.njit(DOUBLED_SIGNATURE, target="compile-only")(doubled_into)
    with pytest.raises(CompileOnlyError):
        fn(None, np.zeros(5))
    assert ".entry" in all_ptx(fn)


# -- GPU code, compile-only -----------------------------------------------------------

@pytest.mark.parametrize("fn, args", [
    (prange_reads_optional, (X, X + 1, True)),
    (array_expression, (X, X + 1, True)),
    (optional_array_argument, (np.arange(6), X)),
    (returned_variable, (X, True)),
    (optional_callee_result, (X, True)),
    (reassigned_in_a_loop, (X, 10)),
])
def test_optional_arrays_compile_to_gpu_kernels(fn, args):
    assert ".entry" in all_ptx(compile_only(fn, *args))


def assigned_in_a_prange_body(a, b, out):
    for i in prange(a.shape[0]):
        z = None
        if a[i] > 0:
            z = b
        if z is not None:
            out[i] = z[i]
    return out


def assigned_after_a_read_in_an_inner_loop(a, b, out):
    """The read is lowered before the assignment (an inner loop's back edge
    brings the array to it)."""
    for i in prange(a.shape[0]):
        z = None
        s = 0.0
        for j in range(3):
            if z is not None:
                s += z[i]
            if a[i] > j:
                z = b
        out[i] = s
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_optional_arrays_assigned_in_prange_bodies(target):
    a = np.arange(-2.0, 4.0)
    for fn in (assigned_in_a_prange_body, assigned_after_a_read_in_an_inner_loop):
        check(fn, a, a * 10, np.zeros(6), target=target)


def test_optional_arrays_assigned_in_prange_bodies_compile_to_gpu_kernels():
    a = np.arange(-2.0, 4.0)
    for fn in (assigned_in_a_prange_body, assigned_after_a_read_in_an_inner_loop):
        assert ".entry" in all_ptx(compile_only(fn, a, a * 10, np.zeros(6)))


def view_made_in_a_prange_body(a, out):
    for i in prange(a.shape[0]):
        z = None
        if a[i] > 0:
            z = a[i:]
        if z is not None:
            out[i] = z[0]
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_optional_array_of_an_array_made_in_a_prange_body(target):
    # carried between the body's blocks as its array (lowering/carried.py)
    check(view_made_in_a_prange_body, np.arange(-2.0, 4.0), np.zeros(6), target=target)


def test_optional_array_of_an_array_made_in_a_prange_body_compiles_to_a_gpu_kernel():
    a = np.arange(-2.0, 4.0)
    assert ".entry" in all_ptx(compile_only(view_made_in_a_prange_body, a, np.zeros(6)))
