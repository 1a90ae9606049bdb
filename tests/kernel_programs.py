"""Kernels of the kernel API and what they must compute, for every way of
running them: the simulator (test_kernel_sim.py) and the compiled `kernel`
on the GPU and the CPU.

Each `Case` holds a kernel (a plain module-level function), its launch
sizes, a function that makes fresh arguments, a NumPy `reference` of what
the launch must leave in them and an `observe` that reads those values from
the arguments after the launch. `check(case, decorator)` runs one:

    check(CASES["transpose_tiled"], kernel_sim)
    check(CASES["transpose_tiled"], kernel)       # the compiled kernel

Results of correct kernels do not depend on the order work-items run in or
on the local size chosen when it is omitted; where a kernel's raw output
does (the old values atomics return), `observe` sorts it first.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np

from numba_mlir_gpu.kernel import (GLOBAL_MEM_FENCE, LOCAL_MEM_FENCE, WARP_SIZE, atomic, barrier,
                                   get_global_id, get_global_size, get_group_id, get_local_id,
                                   get_local_size, get_num_groups, group, local, mem_fence,
                                   private)

TILE = 16            # transpose_tiled: tiles of TILE x TILE
SUM_GROUP = 256      # block_sum: the local size (a power of two; the default one)
SCAN_GROUP = 128     # warp_scan: the local size (a multiple of WARP_SIZE)


@dataclass
class Case:
    name: str
    kernel: Callable
    inputs: Callable[[], tuple]          # fresh arguments of a launch
    reference: Callable[..., dict]       # (*arguments before the launch) -> {name: expected}
    observe: Callable[..., dict]         # (*arguments after the launch) -> {name: value}
    global_size: int | tuple
    local_size: int | tuple | None       # None: launched as kernel[global_size]
    rtol: float = 0.0                    # 0: exact


def launch(case: Case, decorator, args) -> None:
    k = decorator(case.kernel)
    if case.local_size is None:
        k[case.global_size,](*args)
    else:
        k[case.global_size, case.local_size](*args)


def check(case: Case, decorator) -> None:
    """Launch `case` with `decorator` (kernel_sim, kernel) and compare."""
    args = case.inputs()
    expected = case.reference(*copy.deepcopy(args))
    launch(case, decorator, args)
    got = case.observe(*args)
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        if case.rtol:
            np.testing.assert_allclose(got[name], value, rtol=case.rtol, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], value, err_msg=name)


def _rng(seed=0):
    return np.random.default_rng(seed)


# ------------------------------------------------------------ ids and sizes

def ids(out):
    """Every id and size of every work-item: out[k, j, i, :] for the item
    of global id (i, j, k); dimensions beyond the launch's read 0 and 1."""
    i = get_global_id(0)
    j = get_global_id(1)
    k = get_global_id(2)
    for d in range(3):
        out[k, j, i, d] = get_global_id(d)
        out[k, j, i, 3 + d] = get_local_id(d)
        out[k, j, i, 6 + d] = get_group_id(d)
        out[k, j, i, 9 + d] = get_global_size(d)
        out[k, j, i, 12 + d] = get_local_size(d)
        out[k, j, i, 15 + d] = get_num_groups(d)


def _padded(sizes, fill):
    sizes = (sizes,) if isinstance(sizes, int) else tuple(sizes)
    return sizes + (fill,) * (3 - len(sizes))


def _ids_case(name, gs, ls, global_only=False):
    g3 = _padded(gs, 1)
    fields = [0, 1, 2, 9, 10, 11] if global_only else list(range(18))

    def inputs():
        return (np.full(g3[::-1] + (18,), -1, np.int64),)

    def reference(out):
        l3 = _padded(ls, 1) if ls is not None else (1, 1, 1)
        expected = np.empty_like(out)
        k, j, i = np.indices(g3[::-1])
        for d, index in enumerate((i, j, k)):
            expected[..., d] = index
            expected[..., 3 + d] = index % l3[d]
            expected[..., 6 + d] = index // l3[d]
            expected[..., 9 + d] = g3[d]
            expected[..., 12 + d] = l3[d]
            expected[..., 15 + d] = -(-g3[d] // l3[d])
        return {"ids": expected[..., fields]}

    return Case(name, ids, inputs, reference, lambda out: {"ids": out[..., fields]}, gs, ls)


# ------------------------------------------------------- transpose by tiles

def transpose_tiled(a, out):
    """out = a.T through a TILE x TILE local tile (padded against bank
    conflicts); the launch covers a's shape rounded up to whole tiles."""
    tile = local.array((TILE, TILE + 1), np.float32)
    rows = a.shape[0]
    cols = a.shape[1]
    x = get_global_id(0)
    y = get_global_id(1)
    lx = get_local_id(0)
    ly = get_local_id(1)
    if x < cols and y < rows:
        tile[ly, lx] = a[y, x]
    barrier(LOCAL_MEM_FENCE)
    ox = get_group_id(1) * TILE + lx
    oy = get_group_id(0) * TILE + ly
    if ox < rows and oy < cols:
        out[oy, ox] = tile[lx, ly]


def _transpose_case():
    rows, cols = 37, 50

    def inputs():
        return (_rng(1).standard_normal((rows, cols)).astype(np.float32),
                np.zeros((cols, rows), np.float32))

    def up(n):
        return -(-n // TILE) * TILE
    return Case("transpose_tiled", transpose_tiled, inputs,
                lambda a, out: {"out": a.T}, lambda a, out: {"out": out},
                (up(cols), up(rows)), (TILE, TILE))


# -------------------------------------------------- tree sum of each group

def block_sum(x, partial):
    """partial[g] = the sum of group g's elements of x: a tree of halving
    steps in local memory with a barrier after each. The global size is
    len(x), so the last group may be partial: only its active items' slots
    are written, and the tree never reads beyond them."""
    sm = local.array(SUM_GROUP, np.float64)
    lid = get_local_id(0)
    sm[lid] = x[get_global_id(0)]
    barrier()
    n = min(get_local_size(0), get_global_size(0) - get_group_id(0) * get_local_size(0))
    s = SUM_GROUP // 2
    while s > 0:
        if lid < s and lid + s < n:
            sm[lid] += sm[lid + s]
        barrier()
        s //= 2
    if lid == 0:
        partial[get_group_id(0)] = sm[0]


def _block_sum_case():
    n = 8 * SUM_GROUP + 37      # the last group is partial
    groups = -(-n // SUM_GROUP)

    def inputs():
        # integers as floats: every order of summation gives the same bits
        return _rng(2).integers(-50, 50, n).astype(np.float64), np.zeros(groups)
    return Case("block_sum", block_sum, inputs,
                lambda x, p: {"partial": np.add.reduceat(x, np.arange(0, n, SUM_GROUP))},
                lambda x, p: {"partial": p}, n, SUM_GROUP)


# --------------------------------------------------------------- histograms

def histogram(data, bins):
    """bins[v] = how many elements of data are v (atomic.add; no barrier;
    the global size is not a multiple of the local size)."""
    i = get_global_id(0)
    atomic.add(bins, data[i], 1)


def histogram_2d(a, b, counts):
    """counts[a[i], b[i]] += 1 through a tuple index."""
    i = get_global_id(0)
    atomic.add(counts, (a[i], b[i]), 1)


def _histogram_cases():
    n, nbins = 3000, 50

    def inputs():
        return _rng(3).integers(0, nbins, n), np.zeros(nbins, np.int32)

    def inputs_2d():
        rng = _rng(4)
        return rng.integers(0, 7, n), rng.integers(0, 5, n), np.zeros((7, 5), np.int64)

    def reference_2d(a, b, counts):
        np.add.at(counts, (a, b), 1)
        return {"counts": counts}
    return [
        Case("histogram", histogram, inputs,
             lambda data, bins: {"bins": np.bincount(data, minlength=nbins)},
             lambda data, bins: {"bins": bins}, n, 128),
        Case("histogram_2d", histogram_2d, inputs_2d, reference_2d,
             lambda a, b, counts: {"counts": counts}, n, 96),
    ]


# ------------------------------------------------------------------ atomics

def atomics_contended(vals, acc, olds):
    """Every work-item updates the same elements: the final values and the
    multiset of the old values returned do not depend on the order."""
    i = get_global_id(0)
    olds[0, i] = atomic.add(acc, 0, 1)
    olds[1, i] = atomic.sub(acc, 1, 2)
    atomic.min(acc, 2, vals[i])
    atomic.max(acc, 3, vals[i])
    olds[2, i] = atomic.exchange(acc, 4, vals[i])
    while True:                       # an add made of compare-and-swap
        old = acc[5]
        if atomic.cas(acc, 5, old, old + 3) == old:
            break


def _atomics_contended_case():
    n = 300

    def inputs():
        vals = _rng(5).permutation(n).astype(np.int32) + 10
        acc = np.array([0, 2 * n, 1 << 30, -(1 << 30), -1, 0], np.int32)
        return vals, acc, np.zeros((3, n), np.int32)

    def reference(vals, acc, olds):
        return {"acc": np.array([n, 0, vals.min(), vals.max(), 3 * n], np.int32),
                "add_olds": np.arange(n), "sub_olds": 2 * np.arange(1, n + 1),
                "exchange_chain": np.sort(np.append(vals, -1))}

    def observe(vals, acc, olds):
        # the exchanged values form a chain: -1 -> v_a -> v_b ... -> acc[4]
        return {"acc": acc[[0, 1, 2, 3, 5]], "add_olds": np.sort(olds[0]),
                "sub_olds": np.sort(olds[1]), "exchange_chain": np.sort(np.append(olds[2], acc[4]))}
    return Case("atomics_contended", atomics_contended, inputs, reference, observe, n, 64)


def atomics_per_element(vals, arr, olds, ints, int_olds):
    """Each work-item updates elements of its own: old values are exact."""
    i = get_global_id(0)
    olds[0, i] = atomic.add(arr, (0, i), vals[i])
    olds[1, i] = atomic.sub(arr, (1, i), vals[i])
    olds[2, i] = atomic.min(arr, (2, i), vals[i])
    olds[3, i] = atomic.max(arr, (3, i), vals[i])
    olds[4, i] = atomic.exchange(arr, (4, i), vals[i])
    int_olds[0, i] = atomic.cas(ints, (0, i), i % 2, 100 + i)     # swaps where ints[0, i] == i % 2
    int_olds[1, i] = atomic.add(ints, (1, i), i)
    int_olds[2, i] = atomic.max(ints, (2, i), 2 * i)


def _atomics_per_element_case():
    n = 200

    def inputs():
        rng = _rng(6)
        vals = rng.integers(-8, 8, n) * 0.5
        arr = rng.integers(-8, 8, (5, n)) * 0.5
        ints = np.stack([np.arange(n) % 3, rng.integers(0, 9, n), rng.integers(0, 2 * n, n)])
        return vals, arr, np.zeros((5, n)), ints.astype(np.int64), np.zeros((3, n), np.int64)

    def reference(vals, arr, olds, ints, int_olds):
        i = np.arange(n)
        new = np.stack([arr[0] + vals, arr[1] - vals, np.minimum(arr[2], vals),
                        np.maximum(arr[3], vals), vals])
        new_ints = np.stack([np.where(ints[0] == i % 2, 100 + i, ints[0]), ints[1] + i,
                             np.maximum(ints[2], 2 * i)])
        return {"arr": new, "olds": arr, "ints": new_ints, "int_olds": ints}
    return Case("atomics_per_element", atomics_per_element, inputs, reference,
                lambda vals, arr, olds, ints, int_olds: {"arr": arr, "olds": olds, "ints": ints,
                                                         "int_olds": int_olds}, n, 64)


# ------------------------------------------------------ group collectives

def group_collectives(x, out):
    """Each item: its group's sum, min and max of x, and the doubled x of
    the item of flattened local id 5 (2-D groups, partial along dim 1)."""
    i = get_global_id(0)
    j = get_global_id(1)
    v = x[j, i]
    out[0, j, i] = group.reduce_add(v)
    out[1, j, i] = group.reduce_min(v)
    out[2, j, i] = group.reduce_max(v)
    out[3, j, i] = group.broadcast(2 * v, 5)


def _group_case():
    gs, ls = (22, 13), (8, 4)      # partial along both dims; every group has >= 6 items

    def inputs():
        return _rng(7).integers(-1000, 1000, gs[::-1]), np.zeros((4,) + gs[::-1], np.int64)

    def reference(x, out):
        expected = np.empty_like(out)
        for g1 in range(0, gs[1], ls[1]):
            for g0 in range(0, gs[0], ls[0]):
                block = x[g1:g1 + ls[1], g0:g0 + ls[0]]     # the group's active items
                where = (slice(None), slice(g1, g1 + ls[1]), slice(g0, g0 + ls[0]))
                # flattened local ids number the active items: 5 = l0 + e0 * l1
                e0 = block.shape[1]
                expected[where] = np.array([block.sum(), block.min(), block.max(),
                                            2 * block[5 // e0, 5 % e0]])[:, None, None]
        return {"out": expected}
    return Case("group_collectives", group_collectives, inputs, reference,
                lambda x, out: {"out": out}, gs, ls)


# ---------------------------------------------------------------- shuffles

def shuffles(x, out):
    """Every shuffle, with lanes outside the warp and beyond the group's
    items (local size 48: a warp of 32 and one of 16; the last group has 4
    items), which give the item's own value."""
    i = get_global_id(0)
    v = x[i]
    out[0, i] = group.shuffle_idx(v, 3)
    out[1, i] = group.shuffle_idx(v, 40)
    out[2, i] = group.shuffle_down(v, 1)
    out[3, i] = group.shuffle_down(v, 5)
    out[4, i] = group.shuffle_up(v, 2)
    out[5, i] = group.shuffle_xor(v, 1)
    out[6, i] = group.shuffle_xor(v, 16)


def shuffle_reference(x, global_size, local_size, kind, arg):
    """What group.shuffle_<kind>(x[i], arg) gives work-item i of a 1-D launch."""
    out = np.empty_like(x)
    for i in range(global_size):
        lid = i % local_size
        group_base = i - lid
        active = min(local_size, global_size - group_base)
        lane = lid % WARP_SIZE
        source = {"idx": arg, "down": lane + arg, "up": lane - arg, "xor": lane ^ arg}[kind]
        source_lid = lid - lane + source
        inside = 0 <= source < WARP_SIZE and source_lid < active
        out[i] = x[group_base + source_lid] if inside else x[i]
    return out


def _shuffles_case():
    n, ls = 148, 48
    calls = [("idx", 3), ("idx", 40), ("down", 1), ("down", 5), ("up", 2), ("xor", 1),
             ("xor", 16)]

    def inputs():
        return _rng(8).integers(0, 10**6, n), np.zeros((len(calls), n), np.int64)
    return Case("shuffles", shuffles, inputs,
                lambda x, out: {"out": np.stack([shuffle_reference(x, n, ls, kind, arg)
                                                 for kind, arg in calls])},
                lambda x, out: {"out": out}, n, ls)


def warp_scan(x, out):
    """out = the inclusive prefix sum of x within each group: shuffle_up
    steps within each warp, then each warp adds the totals of the warps
    before it, through a local array (the last group is partial)."""
    lid = get_local_id(0)
    i = get_global_id(0)
    lane = lid % WARP_SIZE
    warp = lid // WARP_SIZE
    n = min(get_local_size(0), get_global_size(0) - get_group_id(0) * get_local_size(0))
    v = x[i]
    d = 1
    while d < WARP_SIZE:
        t = group.shuffle_up(v, d)
        if lane >= d:
            v += t
        d *= 2
    totals = local.array(SCAN_GROUP // WARP_SIZE, np.int64)
    if lane == WARP_SIZE - 1 or lid == n - 1:
        totals[warp] = v
    barrier()
    for w in range(warp):
        v += totals[w]
    out[i] = v


def _scan_case():
    n = 4 * SCAN_GROUP + 50     # a partial last group of a warp and 18 items

    def inputs():
        return _rng(9).integers(-100, 100, n), np.zeros(n, np.int64)

    def reference(x, out):
        return {"out": np.concatenate([np.cumsum(x[s:s + SCAN_GROUP])
                                       for s in range(0, n, SCAN_GROUP)])}
    return Case("warp_scan", warp_scan, inputs, reference, lambda x, out: {"out": out},
                n, SCAN_GROUP)


# ---------------------------------------------------------- private arrays

def private_arrays(x, out):
    """Work-item scratch: out[i] = sum_k k * x[i] (k < 4) plus the sum of
    a 2 x 3 table of i + r + c, through two private arrays."""
    i = get_global_id(0)
    p = private.array(4, np.float64)
    q = private.array((2, 3), numba.int32)
    for k in range(4):
        p[k] = k * x[i]
    for r in range(2):
        for c in range(3):
            q[r, c] = i + r + c
    s = 0.0
    for k in range(3, -1, -1):
        s += p[k]
    for r in range(2):
        for c in range(3):
            s += q[r, c]
    out[i] = s


def _private_case():
    n = 150

    def inputs():
        return _rng(10).integers(-20, 20, n).astype(np.float64), np.zeros(n)

    def reference(x, out):
        i = np.arange(n)
        return {"out": 6 * x + 6 * i + 9}
    return Case("private_arrays", private_arrays, inputs, reference,
                lambda x, out: {"out": out}, n, 32)


# ------------------------------------------------- omitted local size, scalars

def scale(a, factor, out):
    """out = factor * a, 2-D, with a scalar argument; launched with no local
    size."""
    i = get_global_id(0)
    j = get_global_id(1)
    out[j, i] = factor * a[j, i]
    mem_fence(GLOBAL_MEM_FENCE)


def _scale_case():
    shape = (30, 700)

    def inputs():
        return _rng(11).standard_normal(shape), 2.5, np.zeros(shape)
    return Case("scale_omitted_local", scale, inputs,
                lambda a, factor, out: {"out": factor * a},
                lambda a, factor, out: {"out": out}, shape[::-1], None)


CASES = {case.name: case for case in [
    _ids_case("ids_1d", 100, 32),
    _ids_case("ids_2d", (20, 13), (8, 4)),
    _ids_case("ids_3d", (5, 6, 7), (2, 3, 4)),
    _ids_case("ids_1d_omitted_local", 700, None, global_only=True),
    _ids_case("ids_3d_omitted_local", (9, 4, 3), None, global_only=True),
    _transpose_case(),
    _block_sum_case(),
    *_histogram_cases(),
    _atomics_contended_case(),
    _atomics_per_element_case(),
    _group_case(),
    _shuffles_case(),
    _scan_case(),
    _private_case(),
    _scale_case(),
]}
