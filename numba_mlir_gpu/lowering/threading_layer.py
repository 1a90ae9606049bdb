"""Calls of Numba's threading layer from host code (numba.get_num_threads /
set_num_threads): two external functions each engine resolves to the
layer's C functions in this process (runtime/threads.py), by name, so
cached code keeps working."""
from __future__ import annotations

from .._mlir import func, ir
from .build import declare_function

GET_THREADS_SYMBOL = "nmg_get_num_threads"
SET_THREADS_SYMBOL = "nmg_set_num_threads"


def _i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def get_num_threads(module: ir.Module) -> ir.Value:
    """The calling thread's count (i32)."""
    symbol = declare_function(module, GET_THREADS_SYMBOL, [], [_i32()])
    return func.CallOp([_i32()], symbol, []).result


def set_num_threads(module: ir.Module, count: ir.Value) -> None:
    func.CallOp([], declare_function(module, SET_THREADS_SYMBOL, [_i32()], []), [count])
