"""Calls of Numba's threading layer from host code (numba.get_num_threads /
set_num_threads): two external functions each engine resolves to the
layer's C functions in this process (runtime/threads.py), by name, so
cached code keeps working."""
from __future__ import annotations

from .._mlir import func, ir

GET_THREADS_SYMBOL = "nmg_get_num_threads"
SET_THREADS_SYMBOL = "nmg_set_num_threads"


def _i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def _declared(module: ir.Module, symbol: str, inputs: list, results: list) -> str:
    if symbol not in ir.SymbolTable(module.operation):
        with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
            decl = func.FuncOp(symbol, ir.FunctionType.get(inputs, results))
            decl.attributes["sym_visibility"] = ir.StringAttr.get("private")
    return symbol


def get_num_threads(module: ir.Module) -> ir.Value:
    """The calling thread's count (i32)."""
    return func.CallOp([_i32()], _declared(module, GET_THREADS_SYMBOL, [], [_i32()]), []).result


def set_num_threads(module: ir.Module, count: ir.Value) -> None:
    func.CallOp([], _declared(module, SET_THREADS_SYMBOL, [_i32()], []), [count])
