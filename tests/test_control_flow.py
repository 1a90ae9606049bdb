"""if/elif/else, for over range, while, break, continue; variables assigned on
several paths."""
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu import UnsupportedConstructError

from .support import TARGETS, check, ours
from .test_codegen import compile_only


def branches(x):
    if x < 0:
        r = -1
    elif x == 0:
        r = 0
    elif x < 10:
        r = 1
    else:
        r = 2
    return r


def loops(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        total += i * i
        if total > 10000:
            break
    j = 0
    while j < n:
        j += 2
    return total, j


def range_forms(a, b, s):
    acc = 0
    for i in range(a, b, s):
        acc = acc * 3 + i
    for i in range(b, a, -s):
        acc -= i
    for i in range(a, b):
        acc += i
    return acc


def nested(n, m):
    acc = 0.0
    for i in range(n):
        for j in range(m):
            if (i + j) % 2:
                acc += i * 0.5 - j
            else:
                acc -= 0.25
    return acc


def float_loop(x):
    y = x
    k = 0
    while y > 1.0:
        y = y / 2.0
        k += 1
    return y, k


@pytest.mark.parametrize("target", TARGETS)
def test_if_elif_else(target):
    for x in (-5, 0, 3, 50):
        check(branches, x, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_for_while_break_continue(target):
    for n in (0, 1, 7, 100, 1000):
        check(loops, n, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_range_forms(target):
    for a, b, s in [(0, 10, 1), (3, 20, 4), (-5, 5, 3), (10, 0, 2)]:
        check(range_forms, a, b, s, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_nested_loops(target):
    check(nested, 13, 7, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_while_float(target):
    check(float_loop, 1000.0, target=target)


def iterate_array(a):
    acc = 0.0
    for x in a:
        acc += x * 2
    return acc


def enumerate_array(a):
    acc = 0
    for i, x in enumerate(a):
        acc += i * x
    return acc


def iterate_rows(m):
    acc = 0.0
    for row in m:
        acc += row[0] - row[-1]
    return acc


def enumerate_rows_write(m):
    for i, row in enumerate(m):
        row[0] = i
    return m


def iterate_empty(a):
    n = 0
    for x in a:
        n += 1
    return n


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn,args", [
    (iterate_array, (np.arange(5.0),)),
    (enumerate_array, (np.arange(4),)),
    (iterate_rows, (np.arange(12.0).reshape(3, 4),)),
    (enumerate_rows_write, (np.ones((3, 2)),)),
    (iterate_empty, (np.zeros(0),)),
    (iterate_array, (np.array([True, False, True]),)),
])
def test_array_iteration_matches_numba(fn, args, target):
    check(fn, *args, target=target)


def heap_from_either_branch(n, fresh):
    """A tuple of arrays assigned in two branches (pynndescent's
    `current_graph = make_heap(...)` or `= init_graph`), then swapped in a
    loop: carried between blocks as its arrays."""
    if fresh:
        heap = (np.zeros((n, 3), np.int32), np.full((n, 3), np.inf, np.float32))
    else:
        heap = (np.ones((n, 3), np.int32), np.zeros((n, 3), np.float32))
    for i in prange(n):
        heap[1][i, 0] = i
        heap[0][i, 1] = 2 * i
    pairs = (heap[1], heap[1] * 2)
    for _ in range(3):
        pairs = (pairs[1], pairs[0] + 1)
    return heap[0].sum() + heap[1][:, 0].sum() + pairs[0][:, 0].sum()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fresh", [True, False])
def test_tuple_of_arrays_assigned_in_branches_and_loops(target, fresh):
    check(heap_from_either_branch, 37, fresh, target=target)



def rows_from_either_array(a, b, out):
    """An array variable of a prange body assigned in two places: a row of
    `a`, or of `b` on some rows."""
    for i in prange(a.shape[0]):
        v = a[i]
        if a[i, 0] > 0.5:
            v = b[i]
        s = 0.0
        for j in range(v.shape[0]):
            s += v[j]
        out[i] = s


def halved_in_an_inner_loop(a, out):
    """A new array per trip of an inner loop of the body (`w = w * 0.5`)."""
    for i in prange(a.shape[0]):
        w = a[i] + 1.0
        for _ in range(i % 4):
            w = w * 0.5
        out[i] = w.sum()


def view_or_array_from_before_the_loop(a, b, out):
    """A variable holding an array before the loop, reassigned in the body
    on some rows: run in order, a row reads the array an earlier row
    assigned (Numba's parallel=True gives that too, chunk by chunk)."""
    v = b[0]
    for i in prange(a.shape[0]):
        if a[i, 0] > 0.5:
            v = a[i]
        out[i] = v[1]
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_array_variables_assigned_more_than_once_in_a_prange_body(target):
    rng = np.random.default_rng(4)
    a, b = rng.random((45, 7)), rng.random((45, 7)) * 10
    check(rows_from_either_array, a, b, np.zeros(45), target=target)
    check(halved_in_an_inner_loop, a, np.zeros(45), target=target)


def test_array_variable_of_a_prange_body_read_before_it_is_assigned_is_refused():
    a = np.random.default_rng(4).random((45, 7))
    with pytest.raises(UnsupportedConstructError, match="array variable 'v' of a prange body read"):
        ours(view_or_array_from_before_the_loop, "cpu")(a, a * 10, np.zeros(45))


def test_array_variables_assigned_more_than_once_in_a_prange_body_compile_for_the_gpu():
    a = np.ones((45, 7))
    compile_only(rows_from_either_array, a, a, np.zeros(45))
    compile_only(halved_in_an_inner_loop, a, np.zeros(45))


def flag_and_row(x, out):
    """A tuple of a flag and an array, assigned in two branches of a prange
    body (pynndescent's hub trees return such tuples)."""
    for i in prange(x.shape[0]):
        if x[i, 0] > 0.5:
            t = (True, x[i])
        else:
            t = (False, x[i] * 2)
        out[i] = t[1].sum() if t[0] else -t[1].sum()
    return out


def flag_and_array(x, c):
    if c:
        t = (True, x)
    else:
        t = (False, x * 2)
    for _ in range(3):
        t = (not t[0], t[1] + 1)
    return t[1].sum() if t[0] else -t[1].sum()


@pytest.mark.parametrize("target", TARGETS)
def test_tuples_of_flags_and_arrays_assigned_more_than_once(target):
    x = np.random.default_rng(6).random((33, 5))
    check(flag_and_row, x, np.zeros(33), target=target)
    for c in (True, False):
        check(flag_and_array, x[0], c, target=target)


def test_tuples_of_flags_and_arrays_in_a_prange_body_compile_for_the_gpu():
    x = np.ones((33, 5))
    compile_only(flag_and_row, x, np.zeros(33))
