"""targets/gpu/early_loads.py: in a trip of independent iterations, a load
moves above the other iterations' stores, never above its own iteration's,
an untagged write, or a write of a variable slot every iteration shares.
Values: a row kernel whose iterations read back what they wrote, on CPU
and GPU; the PTX of the row softmax loads a trip's elements before its first store."""
import re

import numpy as np
import pytest
from numba import prange

from benchmarks.cases import row_softmax
from numba_mlir_gpu._mlir import ir
from numba_mlir_gpu.targets.gpu import schedules
from numba_mlir_gpu.targets.gpu.early_loads import issue_loads_early

from .support import TARGETS, check
from .test_codegen import all_ptx, compile_only

# two copies of `b[k] = a[k] * 2` then, in copy 1, `c[k] = b[k]` (its own store
# read back); STATUS: an operation between the copies. `test.id` names each access.
TRIP = """
func.func @f(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %s: memref<i32>,
             %n: index) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1 : i32
  %slot = memref.alloca() : memref<index>
  scf.for %k = %c0 to %n step %c2 {
    %x0 = memref.load %a[%k] {numba_mlir_gpu.copy = 0 : i32, test.id = "load_a0"} : memref<?xf32>
    %y0 = arith.mulf %x0, %two : f32
    memref.store %y0, %b[%k] {numba_mlir_gpu.copy = 0 : i32, test.id = "store_b0"} : memref<?xf32>
    STATUS
    %k1 = INDEX
    %x1 = memref.load %a[%k1] {numba_mlir_gpu.copy = 1 : i32, test.id = "load_a1"} : memref<?xf32>
    %y1 = arith.mulf %x1, %two : f32
    memref.store %y1, %b[%k1] {numba_mlir_gpu.copy = 1 : i32, test.id = "store_b1"} : memref<?xf32>
    %z1 = memref.load %b[%k1] {numba_mlir_gpu.copy = 1 : i32, test.id = "load_b1"} : memref<?xf32>
    memref.store %z1, %c[%k1] {numba_mlir_gpu.copy = 1 : i32, test.id = "store_c1"} : memref<?xf32>
  } {numba_mlir_gpu.independent_copies}
  return
}
"""


def _order(status: str = "", index: str = "arith.addi %k, %c0 : index") -> list[str]:
    """The accesses of the trip, by `test.id`, after issue_loads_early."""
    with ir.Context(), ir.Location.unknown():
        ir.Context.current.allow_unregistered_dialects = True
        module = ir.Module.parse(TRIP.replace("STATUS", status).replace("INDEX", index))
        issue_loads_early(module)
        assert module.operation.verify()
        text = str(module)
    assert "independent_copies" not in text and "numba_mlir_gpu.copy" not in text
    return re.findall(r'test.id = "(\w+)"', text)


def test_load_of_a_later_copy_moves_above_an_earlier_copys_store():
    order = _order()
    assert order.index("load_a1") < order.index("store_b0")


def test_load_stays_below_a_store_of_its_own_copy():
    order = _order()
    assert order.index("load_b1") > order.index("store_b1")


def test_untagged_write_is_a_barrier():
    order = _order('memref.store %one, %s[] {test.id = "status"} : memref<i32>')
    assert order.index("load_a1") > order.index("status")


def test_variable_slot_written_in_the_trip_keeps_the_order():
    # copy 1's index comes from a slot that copy 0 writes: a dependence
    order = _order('memref.store %k, %slot[] {numba_mlir_gpu.copy = 0 : i32, test.id = "set"}'
                   " : memref<index>",
                   'memref.load %slot[] {numba_mlir_gpu.copy = 1 : i32, test.id = "get"}'
                   " : memref<index>")
    assert order == ["load_a0", "store_b0", "set", "get", "load_a1", "store_b1", "load_b1",
                     "store_c1"]


def test_variable_slot_only_read_in_the_trip_moves_with_the_load():
    order = _order(index='memref.load %slot[] {numba_mlir_gpu.copy = 1 : i32, test.id = "get"}'
                         " : memref<index>")
    assert order.index("get") < order.index("load_a1") < order.index("store_b0")


def test_index_loaded_from_an_array_keeps_the_load_in_place():
    # copy 1's index is an element of an array, not a variable slot: its load
    # may not move with it (nor may the rule fail on such an address while
    # some slot is unchanged)
    order = _order('%u = memref.load %slot[] : memref<index>\n    %kf = memref.load %a[%c0] {numba_mlir_gpu.copy = 1 : i32, test.id = "get"}'
                   " : memref<?xf32>\n    %ki = arith.fptosi %kf : f32 to i64",
                   "arith.index_cast %ki : i64 to index")
    assert order.index("store_b0") < order.index("load_a1")


def scale_rows_in_place(x, out):
    """Each inner iteration writes out[i, j], then reads it back."""
    for i in prange(x.shape[0]):
        top = 0.0
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * 3.0
            out[i, j] = out[i, j] - x[i, j]
            top = max(top, out[i, j])
        for j in range(x.shape[1]):
            out[i, j] = out[i, j] / top + x[i, j]


@pytest.mark.parametrize("target", TARGETS)
def test_rows_that_read_back_their_writes(target):
    x = np.random.default_rng(3).random((77, 1029)) + 0.5
    check(scale_rows_in_place, x, np.zeros_like(x), target=target)


def running_max_of_a_chosen_element(A, z, out):
    """The element read in the inner loop is chosen by another array's
    element (a generated program that once made the rule fail)."""
    n = A.shape[0]
    for i in prange(1, n):
        c = 0.0
        for j in range(i + 1):
            c = max(c, A[min(max(z[0], 0), n - 1), j % A.shape[1]])
        out[i] = c


def test_inner_loop_reading_at_an_index_loaded_from_an_array_compiles_for_the_gpu():
    A, z = np.random.default_rng(5).random((37, 19)), np.array([3, 1])
    compile_only(running_max_of_a_chosen_element, A, z, np.zeros(37))


@pytest.mark.parametrize("target", TARGETS)
def test_inner_loop_reading_at_an_index_loaded_from_an_array(target):
    A, z = np.random.default_rng(5).random((37, 19)), np.array([3, 1])
    check(running_max_of_a_chosen_element, A, z, np.zeros(37), target=target)


def test_row_softmax_issues_a_trips_loads_before_its_stores():
    x = np.zeros((64, 1024), np.float32)
    ptx = all_ptx(compile_only(row_softmax, x, np.zeros_like(x)))
    # the exp loop's main trip: BODY_UNROLL loads of x, exps and stores to out
    bodies = re.split(r"\n\$L__BB\d+_\d+:", ptx)
    unroll = schedules.BODY_UNROLL
    exp_loop = next(b for b in bodies
                    if b.count("ex2.approx") == unroll and b.count("st.global") == unroll)
    assert exp_loop.rfind("ld.global") < exp_loop.find("st.global")
