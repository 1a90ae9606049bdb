"""compiler/narrow_counters.py: a kernel's while-loop counter that the loop's
own test bounds counts in i32, in a copy of the loop taken when the bound
fits; other bounds run the i64 loop.

The rewrite is JIT-ed on the CPU (MLIR's ExecutionEngine) for loops of both
shapes (increment then test, as CPython's rotated loops are; test then
increment), every orientation of the test, steps 1 and 3, starting near
2^31 and below zero, and compared with the loop left alone for bounds on
both sides of each boundary: a bound one too high for i32 would wrap the
counter. User functions are compared with Numba on CPU and GPU, and the PTX
of the narrowed kernels is checked for the 32-bit counter."""
from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest
from numba import prange

from benchmarks.cases import mandelbrot
from numba_mlir_gpu.api import inspect_ptx
from numba_mlir_gpu._mlir import ExecutionEngine, ir, passmanager
from numba_mlir_gpu.compiler.narrow_counters import narrow_while_counters

from .support import TARGETS, check
from .test_codegen import compile_only

I32_MAX = (1 << 31) - 1
NEAR_TOP = (1 << 31) - 70_000       # the loops below reach 2^31 within 100,000 trips

# n: the counter under test; v: a second counter (bounded by %stop); s: a sum of n's values
INCREMENT_THEN_TEST = """
  %r:3 = scf.while (%n = %start, %v = %zero, %s = %zero) : (i64, i64, i64) -> (i64, i64, i64) {{
    %x = arith.addi %n, %step : i64
    %v1 = arith.addi %v, %one : i64
    %s1 = arith.addi %s, %x : i64
    %below = {test}
    %going = arith.cmpi slt, %v1, %stop : i64
    %c = arith.andi %below, %going : i1
    scf.condition(%c) %x, %v1, %s1 : i64, i64, i64
  }} do {{
  ^bb0(%a: i64, %b: i64, %t: i64):
    scf.yield %a, %b, %t : i64, i64, i64
  }}
"""
TEST_THEN_INCREMENT = """
  %r:3 = scf.while (%n = %start, %v = %zero, %s = %zero) : (i64, i64, i64) -> (i64, i64, i64) {{
    %below = {test}
    %going = arith.cmpi slt, %v, %stop : i64
    %c = arith.andi %going, %below : i1
    scf.condition(%c) %n, %v, %s : i64, i64, i64
  }} do {{
  ^bb0(%a: i64, %b: i64, %t: i64):
    %n1 = arith.addi %a, %step : i64
    %v1 = arith.addi %b, %one : i64
    %t1 = arith.addi %t, %a : i64
    scf.yield %n1, %v1, %t1 : i64, i64, i64
  }}
"""
FUNCTION = """
func.func @count(%bound: i64, %stop: i64, %out: memref<3xi64>)
    attributes {{llvm.emit_c_interface}} {{
  %start = arith.constant {start} : i64
  %step = arith.constant {step} : i64
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  {loop}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  memref.store %r#0, %out[%c0] : memref<3xi64>
  memref.store %r#1, %out[%c1] : memref<3xi64>
  memref.store %r#2, %out[%c2] : memref<3xi64>
  return
}}
"""
# x < bound in each orientation the rewrite takes
TESTS = {"lt": "arith.cmpi slt, %x, %bound : i64", "le": "arith.cmpi sle, %x, %bound : i64",
         "gt": "arith.cmpi sgt, %bound, %x : i64", "ge": "arith.cmpi sge, %bound, %x : i64"}
TO_LLVM = ("builtin.module(convert-scf-to-cf,finalize-memref-to-llvm,convert-arith-to-llvm,"
           "convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts)")


def _module(shape: str, test: str, start: int, step: int) -> ir.Module:
    tested = "%x" if shape is INCREMENT_THEN_TEST else "%n"
    loop = shape.format(test=TESTS[test].replace("%x", tested))
    return ir.Module.parse(FUNCTION.format(start=start, step=step, loop=loop))


def _run(module: ir.Module, cases: list) -> list:
    from mlir.runtime import get_ranked_memref_descriptor
    passmanager.PassManager.parse(TO_LLVM).run(module.operation)
    engine = ExecutionEngine(module, opt_level=2)
    results = []
    for bound, stop in cases:
        out = np.zeros(3, np.int64)
        engine.invoke("count", ctypes.pointer(ctypes.c_int64(bound)),
                      ctypes.pointer(ctypes.c_int64(stop)),
                      ctypes.pointer(ctypes.pointer(get_ranked_memref_descriptor(out))))
        results.append(tuple(out))
    return results


def _bounds(start: int, step: int) -> list[int]:
    edge = [I32_MAX - step - 1, I32_MAX - step, I32_MAX - step + 1, I32_MAX - step + 2,
            I32_MAX, I32_MAX + 1]
    return [-(1 << 40), -(1 << 31) - 1, -(1 << 31), -3, 0, start + 7, *edge,
            (1 << 31) + 5, 1 << 40]


@pytest.mark.parametrize("step", [1, 3])
@pytest.mark.parametrize("start", [NEAR_TOP, -5])
@pytest.mark.parametrize("test", sorted(TESTS))
@pytest.mark.parametrize("shape", [INCREMENT_THEN_TEST, TEST_THEN_INCREMENT],
                         ids=["increment_then_test", "test_then_increment"])
def test_narrowed_loops_count_as_the_i64_loop(shape, test, start, step):
    cases = [(bound, stop) for bound in _bounds(start, step) for stop in (5, 100_000)]
    with ir.Context(), ir.Location.unknown():
        reference = _run(_module(shape, test, start, step), cases)
        module = _module(shape, test, start, step)
        narrow_while_counters(module, in_kernels_only=False)
        module.operation.verify()
        text = str(module)
        # both counters narrowed (n by %bound, v by %stop); s stays i64
        assert "scf.while" in text and ": (i32, i32, i64) -> (i32, i32, i64)" in text
        got = _run(module, cases)
    for (bound, stop), g, e in zip(cases, got, reference):
        assert g == e, f"bound {bound}, stop {stop}: {g} != {e}"


NOT_COUNTERS = {
    # the bound is computed in the loop
    "bound_in_loop": ("%below = arith.cmpi slt, %x, %bound : i64",
                      "%b = arith.addi %bound, %s : i64\n"
                      "    %below = arith.cmpi slt, %x, %b : i64"),
    # the loop may go on with the counter past the bound
    "either_test": ("arith.andi %below, %going", "arith.ori %below, %going"),
    # the counter starts at a value only known when the loop runs
    "unknown_start": ("(%n = %start,", "(%n = %stop,"),
}


@pytest.mark.parametrize("case", sorted(NOT_COUNTERS))
def test_loops_without_a_bounding_test_are_left_alone(case):
    old, new = NOT_COUNTERS[case]
    loop = INCREMENT_THEN_TEST.format(test=TESTS["lt"]).replace(old, new)
    loop = loop.replace("%v1 = arith.addi %v, %one", "%v1 = arith.addi %v, %s")   # v: no counter
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(FUNCTION.format(start=0, step=1, loop=loop))
        before = str(module)
        narrow_while_counters(module, in_kernels_only=False)
        assert str(module) == before


def escape_time(limit, stop, out):
    for i in prange(out.shape[0]):
        n = 0
        v = 0.0
        while n < limit and v < stop[i]:
            v += 0.5 + 0.25 * n
            n += 1
        out[i] = n + v


def stride_three(limit, stop, out):
    """The counter read in the loop (a sum of its values), tested `>=`."""
    for i in prange(out.shape[0]):
        n = 5
        s = 0
        while limit >= n and s < stop[i]:
            s += n
            n += 3
        out[i] = n - s


def break_at_the_top(limit, stop, out):
    """A shape the rewrite does not take (the increment inside the test's
    branches): the same values all the same."""
    for i in prange(out.shape[0]):
        n = -3
        acc = 0
        while True:
            if not (n < limit and acc <= stop[i]):
                break
            acc += i + n
            n += 2
        out[i] = acc * 7 + n


def _stops(count: int, dtype) -> np.ndarray:
    return np.random.default_rng(count).integers(0, 3000, count).astype(dtype)


LIMITS = [-(1 << 40), -1, 0, 1, 37, I32_MAX - 2, I32_MAX, 1 << 31, 1 << 40]


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("target", TARGETS)
def test_counted_loops_of_kernels(target, limit):
    check(escape_time, limit, _stops(1000, np.float64), np.zeros(1000), target=target)
    check(stride_three, limit, _stops(1000, np.int64), np.zeros(1000, np.int64), target=target)
    check(break_at_the_top, limit, _stops(1000, np.int64), np.zeros(1000, np.int64),
          target=target)


@pytest.mark.parametrize("max_iter", [0, 1, 200, 1000])
@pytest.mark.parametrize("target", TARGETS)
def test_mandelbrot(target, max_iter):
    check(mandelbrot, 90, 130, max_iter, np.full((90, 130), -1, np.int64), target=target)


@pytest.mark.parametrize("fn, step", [(escape_time, 1), (mandelbrot, 1)])
def test_the_kernel_counts_in_32_bits(fn, step):
    args = (100, np.ones(10), np.zeros(10)) if fn is escape_time else \
        (64, 64, 100, np.zeros((64, 64), np.int64))
    for ptx in inspect_ptx(compile_only(fn, *args)):
        assert re.search(rf"add\.s32\s+(%r\d+), \1, {step};", ptx)      # the i32 loop
        assert re.search(r"setp\.lt\.s64", ptx)                        # the i64 one
        assert "mov.b32 %" in ptx                                      # the opaque copy
