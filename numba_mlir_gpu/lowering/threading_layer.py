"""Calls of Numba's threading layer from host code (numba.get_num_threads /
set_num_threads, get_parallel_chunksize / set_parallel_chunksize): external
functions each engine resolves to the layer's C functions in this process
(runtime/threads.py), by name, so cached code keeps working."""
from __future__ import annotations

from .._mlir import func, ir
from .build import declare_function

# symbol -> the function of numba.np.ufunc.parallel it is resolved to
SYMBOLS = {
    "nmg_get_num_threads": "_get_num_threads",
    "nmg_set_num_threads": "_set_num_threads",
    "nmg_get_parallel_chunksize": "_get_parallel_chunksize",
    "nmg_set_parallel_chunksize": "_set_parallel_chunksize",
}


def _i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def get_num_threads(module: ir.Module) -> ir.Value:
    """The calling thread's count (i32)."""
    symbol = declare_function(module, "nmg_get_num_threads", [], [_i32()])
    return func.CallOp([_i32()], symbol, []).result


def set_num_threads(module: ir.Module, count: ir.Value) -> None:
    func.CallOp([], declare_function(module, "nmg_set_num_threads", [_i32()], []), [count])


def get_parallel_chunksize(module: ir.Module) -> ir.Value:
    """The calling thread's chunk size (i32, unsigned)."""
    symbol = declare_function(module, "nmg_get_parallel_chunksize", [], [_i32()])
    return func.CallOp([_i32()], symbol, []).result


def set_parallel_chunksize(module: ir.Module, size: ir.Value) -> ir.Value:
    """Sets the calling thread's chunk size (i32); returns the one before."""
    symbol = declare_function(module, "nmg_set_parallel_chunksize", [_i32()], [_i32()])
    return func.CallOp([_i32()], symbol, [size]).result
