"""Array views (slices, rows, columns, .T, reshape/ravel), slice assignment
and global NumPy arrays, each against Numba's own njit."""
import numpy as np
import pytest
from numba import prange

from .support import TARGETS, check, ours


def slice_sum(a):
    return a[1:3].sum() + a[-4:].sum() + a[:2].sum()


def row_of_2d(a):
    acc = 0.0
    for i in range(a.shape[0]):
        row = a[i]
        acc += row[0] * (i + 1) + row[-1]
    return acc


def column_copy(a):
    return a[:, 1].copy()


def return_slice_of_argument(a):
    return a[1:4]


def return_strided_2d(a):
    return a[1:-1, ::2]


def negative_step(a):
    return a[::-2]


def empty_and_clamped(a):
    return a[5:2].size, a[-100:100].size, a[3:3].size


def slice_variables(a, lo, hi, step):
    return a[lo:hi:step].copy()


def fill_slice(a):
    a[1:3] = 7.0
    a[-2:] = -1.0
    return a


def copy_into_slice(a, b):
    a[2:5] = b


def slice_from_same_array(a):
    # (overlapping slices race under parfors in Numba's parallel=True too)
    a[:3] = a[3:]


def write_through_row_view(a):
    for i in range(a.shape[0]):
        row = a[i]
        row[0] = i * 10


def transpose_copy(a):
    return a.T.copy()


def transpose_sum(a):
    t = a.T
    acc = 0.0
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            acc += t[i, j] * (i + 2 * j)
    return acc


def reshape_tuple(a):
    return a.reshape((3, 4))


def reshape_inferred(a):
    return a.reshape(2, -1)


def ravel_2d(a):
    return a.ravel()


def flatten_strided(a):
    return a[:, ::2].flatten()


def prange_rows(a, out):
    for i in prange(a.shape[0]):
        row = a[i, :]
        out[i] = row.sum() * 2


GLOBAL = np.arange(5.0) * 1.5
GLOBAL_INT = np.array([[1, 2], [3, 4]], dtype=np.int32)


def add_global(a):
    return a + GLOBAL


def global_in_prange(n):
    out = np.empty(n)
    for i in prange(n):
        out[i] = GLOBAL[i % 5] + GLOBAL_INT[i % 2, 1]
    return out


def a12():
    return np.arange(12.0)


def m34():
    return np.arange(12.0).reshape(3, 4)


CASES = [
    (slice_sum, lambda: (np.arange(6.0),)),
    (row_of_2d, lambda: (m34(),)),
    (column_copy, lambda: (m34(),)),
    (return_slice_of_argument, lambda: (np.arange(6),)),
    (return_strided_2d, lambda: (np.arange(20.0).reshape(4, 5),)),
    (negative_step, lambda: (np.arange(7),)),
    (empty_and_clamped, lambda: (np.arange(7),)),
    (slice_variables, lambda: (np.arange(10), 8, 1, -3)),
    (slice_variables, lambda: (np.arange(10), -7, 9, 2)),
    (fill_slice, lambda: (np.arange(6.0),)),
    (copy_into_slice, lambda: (np.zeros(8), np.ones(3))),
    (slice_from_same_array, lambda: (np.arange(6.0),)),
    (write_through_row_view, lambda: (np.ones((3, 2)),)),
    (transpose_copy, lambda: (m34(),)),
    (transpose_sum, lambda: (m34(),)),
    (reshape_tuple, lambda: (a12(),)),
    (reshape_inferred, lambda: (a12(),)),
    (ravel_2d, lambda: (m34(),)),
    (flatten_strided, lambda: (m34(),)),
    (prange_rows, lambda: (m34(), np.zeros(3))),
    (add_global, lambda: (np.ones(5),)),
    (global_in_prange, lambda: (7,)),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn,make_args", CASES,
                         ids=[f"{f.__name__}{i}" for i, (f, _) in enumerate(CASES)])
def test_views_match_numba(fn, make_args, target):
    check(fn, *make_args(), target=target)


def slice_constant_sums(ts):
    """A slice object the function closes over (Numba's
    test_parfor_array_access_lower_slice uses a global): a compile-time
    constant."""
    def sums(x):
        y = 0
        for i in prange(x.shape[0]):
            y += x[i, ts].sum()
        return y
    return sums


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ts", [slice(1, 3, None), slice(2, None, None), slice(None, 2, -1),
                                slice(None, None, None), slice(None, None, -2)])
def test_constant_slice_objects(ts, target):
    check(slice_constant_sums(ts), np.arange(40).reshape(10, 4), target=target)


def bad_reshape(a):
    return a.reshape((5, 5))


def zero_step(a, step):
    return a[::step].copy()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn,args,error", [
    (bad_reshape, (np.arange(12.0),), ValueError),
    (zero_step, (np.arange(4.0), 0), ValueError),
])
def test_view_errors_as_in_numba(fn, args, error, target):
    from numba import njit
    from .support import ours
    with pytest.raises(error):
        njit(fn)(*args)
    with pytest.raises(error):
        ours(fn, target)(*args)


# -- one array variable bound to different arrays (branches, loops) -----------

def pick_in_branch(a, b, c):
    if c > 0:
        x = a
    else:
        x = b
    return x.sum()


def new_arrays_in_branches(c):
    if c > 0:
        x = np.ones(3)
    else:
        x = np.zeros(4)
    return x


def view_chosen_in_branch(a, c):
    x = a[:2]
    if c:
        x = a[2:4]
    x[0] = 100
    return a


def last_view_of_loop(m):
    for i in range(0, m.shape[0]):
        z = m[i, :, :]
    return np.max(z)


def maybe_new(a, c):
    if c > 0:
        x = a + 1
    else:
        x = a
    return x.sum(), x


CARRIED = [
    (pick_in_branch, (np.ones(3), np.arange(3.0), 1)),
    (pick_in_branch, (np.ones(3), np.arange(3.0), -1)),
    (new_arrays_in_branches, (1,)),
    (new_arrays_in_branches, (-1,)),
    (view_chosen_in_branch, (np.arange(5.0), True)),
    (view_chosen_in_branch, (np.arange(5.0), False)),
    (last_view_of_loop, (np.arange(60.0).reshape(3, 4, 5),)),
    (maybe_new, (np.ones(3), 1)),
    (maybe_new, (np.ones(3), -1)),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn,args", CARRIED,
                         ids=[f"{f.__name__}{i}" for i, (f, _) in enumerate(CARRIED)])
def test_array_variable_rebound_matches_numba(fn, args, target):
    check(fn, *args, target=target)


# New arrays assigned to a variable inside a loop: carried around it, each
# iteration's array freed once the next replaces it.

def grow_in_loop(a, n):
    x = a
    for i in range(n):
        x = x + 1
    return x


def gradient_descent(X, y, w, lr, steps):
    for s in range(steps):
        grad = X.T @ (X @ w - y)
        w = w - lr * grad
    return w


def jacobi(u, iters):
    for k in range(iters):
        v = u.copy()
        for i in prange(1, u.shape[0] - 1):
            v[i] = 0.5 * (u[i - 1] + u[i + 1])
        u = v
    return u


def swap_buffers(u, steps):
    # after an odd number of steps, the result is the new array; after an
    # even number, u itself, written in place on the way
    v = np.empty_like(u)
    for k in range(steps):
        for i in prange(u.shape[0]):
            v[i] = u[i] * 0.5 + 1.0
        u, v = v, u
    return u


def new_or_view_in_loop(a, n):
    x = a
    for k in range(n):
        if k % 3 == 0:
            x = x + 1.0
        elif k % 3 == 1:
            x = a[::-1] * 2.0
        else:
            x = x[::-1]
    return x


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_new_arrays_carried_around_loops(n, target):
    rng = np.random.default_rng(n)
    check(grow_in_loop, np.arange(4.0), n, target=target)
    X, y = rng.random((30, 4)), rng.random(30)
    check(gradient_descent, X, y, np.zeros(4), 0.01, n, target=target)
    check(jacobi, rng.random(50), n, target=target)
    check(swap_buffers, rng.random(40), n, target=target)
    check(new_or_view_in_loop, np.arange(6.0), n, target=target)


def test_arrays_carried_around_loops_are_freed():
    """Each iteration's array is freed when the next replaces it."""
    import resource
    from .support import ours
    fn = ours(new_or_view_in_loop, "cpu")
    fn(np.ones(4), 4)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    fn(np.ones(100_000), 3000)          # 1.6 GB if nothing were freed
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert after - before < 200_000     # kilobytes


def _identity(a):
    return a


def call_returning_argument(a):
    identity = _identity_jit
    c = identity(a[1:])
    d = identity(a)
    return c.sum() + d.sum(), c


def inplace_in_branch_returns_argument(out, flag):
    if flag:
        out += 1
    return out


def test_argument_updated_in_a_branch_is_returned_itself():
    from .support import ours
    out = np.zeros(3)
    got = ours(inplace_in_branch_returns_argument, "cpu")(out, True)
    assert got is out and (out == 1).all()


@pytest.mark.parametrize("target", TARGETS)
def test_callee_returning_a_view_argument_matches_numba(target):
    check(call_returning_argument, np.arange(5.0), target=target)


from numba import njit as _njit  # noqa: E402
_identity_jit = _njit(_identity)


def views_with_unit_axes(a):
    indices = np.zeros((1, 2, 2, 1), dtype=np.uint64)
    k_list = indices[0, :]
    for i, g in enumerate(a):
        k_list[i, i] = i + 5
    return indices


@pytest.mark.parametrize("target", TARGETS)
def test_views_with_unit_axes_match_numba(target):
    # integer-indexed axes are dropped explicitly, not by a rank-reducing
    # subview (which may drop another unit axis once sizes are constants)
    check(views_with_unit_axes, np.array([1, 1]), target=target)


@pytest.mark.parametrize("target", ["cpu", "compile-only"])
def test_copies_of_views_need_no_runtime_library(target):
    """Buffer deallocation clones the view a callee returns; that copy is a
    loop nest of ours, not `memrefCopy` (libmlir_c_runner_utils, absent
    beside the GPU runtime)."""
    from numba_mlir_gpu import inspect_mlir
    fn = ours(call_returning_argument, target)
    try:
        fn(np.arange(5.0))
    except RuntimeError:          # compile-only: compiled, not run
        pass
    lowered = inspect_mlir(fn, fn.signatures[0], stage="lowered")
    assert "memrefCopy" not in lowered


# -- views assigned inside prange bodies (overlap.py) ----------------------------------
# A GPU kernel cannot copy a view before assigning it: disjoint memory, or the
# destination itself, is read in place; a partial overlap raises at run time.

def copy_reversed_rows(x, out):
    for i in prange(x.shape[0]):
        out[i] = x[i, ::-1]


def add_one_into_rows(x, out):
    for i in prange(x.shape[0]):
        np.add(x[i], 1.0, out[i])


def rows_onto_themselves(x):
    for i in prange(x.shape[0]):
        x[i] = x[i]
    return x


def reverse_rows_in_place(x):
    for i in prange(x.shape[0]):
        x[i] = x[i, ::-1]
    return x


def shift_rows_right(x):
    for i in prange(x.shape[0]):
        x[i, 1:] = x[i, :-1]
    return x


def shift_right(x):
    x[1:] = x[:-1]
    return x


def transpose_into_itself(x):
    x[:, :] = x.T
    return x


@pytest.mark.parametrize("target", TARGETS)
def test_views_assigned_in_prange_bodies(target):
    x = np.random.default_rng(5).random((33, 7))
    check(copy_reversed_rows, x, np.zeros((33, 7)), target=target)
    check(add_one_into_rows, x, np.zeros((33, 7)), target=target)
    check(rows_onto_themselves, x, target=target)
    check(copy_reversed_rows, np.zeros((0, 3)), np.zeros((0, 3)), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_view_of_the_target_is_read_before_writing(target):
    """Numba's parfor pass would make these one loop reading and writing as
    it goes (Numba's own parallel=True gets them wrong); rewrites.py copies
    the right side first, as NumPy reads it."""
    check(shift_right, np.arange(50.0), target=target)
    check(shift_rows_right, np.arange(60.0).reshape(6, 10), target=target)
    check(reverse_rows_in_place, np.arange(20.0).reshape(4, 5), target=target)
    check(transpose_into_itself, np.arange(16.0).reshape(4, 4), target=target)


def test_aliased_arguments_overlapping_are_copied_on_the_cpu():
    """Two arguments over one buffer (a GPU kernel raises instead: see
    test_device_arrays; host arrays get one device copy each, so do not alias there)."""
    x = np.arange(20.0).reshape(4, 5)
    check(copy_reversed_rows, x, x, target="cpu")


def test_views_assigned_in_gpu_kernels_are_not_copied_in_the_kernel():
    from .test_codegen import all_ptx, compile_only
    x = np.ones((4, 3))
    for fn, args in [(copy_reversed_rows, (x, x.copy())), (reverse_rows_in_place, (x,)),
                     (shift_rows_right, (x,))]:
        ptx = all_ptx(compile_only(fn, *args))
        assert "malloc" not in ptx and ".entry" in ptx


# -- .real / .imag of arrays --------------------------------------------------------

def parts_squared(z):
    # Numba's test_parfors.TestParforNumPy.test_real_imag_attr
    return np.sum(z.real ** 2 + z.imag ** 2)


def write_through_parts(z):
    z.real[:] = 3.0
    z.imag[1] = -1.0
    return z.sum()


def parts_of_views(z):
    r = z.imag
    return r[::2].copy(), z.real.shape, z.T.real[1, 0]


def parts_of_real_arrays(a):
    return a.real + 1, a.imag


def parts_in_prange(z, out):
    for i in prange(z.shape[0]):
        out[i] = z.real[i] * z.imag[i]


PART_CASES = [
    (parts_squared, lambda: (np.arange(5) * (1 + 1j),)),
    (write_through_parts, lambda: (np.arange(7) * (2 - 1j),)),
    (parts_of_views, lambda: ((np.arange(12) * (1 - 1j)).reshape(3, 4).astype(np.complex64),)),
    (parts_of_real_arrays, lambda: (np.arange(4.0),)),
    (parts_in_prange, lambda: (np.arange(37) * (0.5 + 2j), np.zeros(37))),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, make_args", PART_CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_real_and_imag_are_views(fn, make_args, target):
    """A complex array's .real and .imag alias its elements' parts, as in
    NumPy: reads, writes through them, and views of them."""
    check(fn, *make_args(), target=target)


def test_real_and_imag_views_compile_for_the_gpu():
    from .test_codegen import compile_only
    for fn, make_args in PART_CASES:
        compile_only(fn, *make_args())


def atleast_views(a, b, s):
    x = np.atleast_2d(a)
    y = np.atleast_3d(b)
    z = np.atleast_1d(a)
    p, q = np.atleast_2d(s, b)
    x[0, 0] += 1.0                      # views: writes reach the arguments
    return x.shape, y.shape, z.shape, p.shape, q.shape, x.sum(axis=0), y[:, :, 0].copy(), p.copy()


def atleast_in_prange(a, out):
    for i in prange(a.shape[0]):
        row = np.atleast_2d(a[i])
        out[i] = row.sum() + row.shape[0]


ATLEAST_CASES = [
    (atleast_views, lambda: (np.arange(6.0), np.arange(6.0).reshape(2, 3), np.array(2.5))),
    (atleast_views, lambda: (np.arange(10.0)[::2], np.asfortranarray(np.ones((3, 2))),
                             np.arange(3.0))),
    (atleast_in_prange, lambda: (np.arange(20.0).reshape(5, 4), np.zeros(5))),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, make_args", ATLEAST_CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_atleast_nd_are_views_as_numbas(fn, make_args, target):
    """np.atleast_1d/2d/3d: NumPy's unit dims (0-d -> (1, 1), (n) -> (1, n),
    (m, n) -> (m, n, 1)) as views of the argument, one array or a tuple."""
    check(fn, *make_args(), target=target)


def test_atleast_nd_compile_for_the_gpu():
    from .test_codegen import compile_only
    for fn, make_args in ATLEAST_CASES:
        compile_only(fn, *make_args())
