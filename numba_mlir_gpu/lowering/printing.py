"""`print(...)` in host code: each item handed to a Python callback of
runtime/printing.py (by symbols each engine resolves), which writes the
line to sys.stdout as Numba's print does (PySys_WriteStdout of str() of the
boxed values, separated by spaces). Constant strings travel as bytes of a
module global, so cached code needs no table of this process."""
from __future__ import annotations

import numpy as np
from numba.core import types

from .._mlir import func, ir
from .build import const, constant_global, declare_function, element_address, to_i64
from .casts import cast

PRINT_INT_SYMBOL = "nmg_print_int"        # (i64 value, i32 unsigned?)
PRINT_FLOAT_SYMBOL = "nmg_print_float"    # (f64 value)
PRINT_BOOL_SYMBOL = "nmg_print_bool"      # (i32 value)
PRINT_TEXT_SYMBOL = "nmg_print_text"      # (i64 address, i64 length) of UTF-8 bytes
PRINT_END_SYMBOL = "nmg_print_end"        # the line is complete
PRINT_SYMBOLS = (PRINT_INT_SYMBOL, PRINT_FLOAT_SYMBOL, PRINT_BOOL_SYMBOL, PRINT_TEXT_SYMBOL,
                 PRINT_END_SYMBOL)


def _i(bits: int) -> ir.Type:
    return ir.IntegerType.get_signless(bits)


def print_number(module: ir.Module, value: ir.Value, ty: types.Type) -> None:
    if isinstance(ty, types.Boolean):
        symbol = declare_function(module, PRINT_BOOL_SYMBOL, [_i(32)], [])
        func.CallOp([], symbol, [cast(value, ty, types.int32)])
    elif isinstance(ty, types.Integer):
        symbol = declare_function(module, PRINT_INT_SYMBOL, [_i(64), _i(32)], [])
        wide = cast(value, ty, types.uint64 if not ty.signed else types.int64)
        func.CallOp([], symbol, [wide, const(types.int32, 0 if ty.signed else 1)])
    else:
        symbol = declare_function(module, PRINT_FLOAT_SYMBOL, [ir.F64Type.get()], [])
        func.CallOp([], symbol, [cast(value, ty, types.float64)])


def print_text(module: ir.Module, text: str, name: str) -> None:
    encoded = text.encode("utf-8")
    data = np.frombuffer(encoded or b"\0", dtype=np.uint8).astype(np.int8)  # no empty global
    source = constant_global(module, name, data, _i(8))
    symbol = declare_function(module, PRINT_TEXT_SYMBOL, [_i(64), _i(64)], [])
    func.CallOp([], symbol, [to_i64(element_address(source)), const(types.int64, len(encoded))])


def print_end(module: ir.Module) -> None:
    func.CallOp([], declare_function(module, PRINT_END_SYMBOL, [], []), [])
