"""`print(...)` in host code: each item handed to a Python callback of
runtime/printing.py (by symbols each engine resolves), which writes the
line to sys.stdout as Numba's print does (PySys_WriteStdout of str() of the
boxed values, separated by spaces). Constant strings travel as bytes of a
module global, so cached code needs no table of this process."""
from __future__ import annotations

import numpy as np
from numba.core import types

from .._mlir import func, ir, llvm, scf
from .._mlir import gpu as gpu_dialect
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
    symbol = declare_function(module, PRINT_TEXT_SYMBOL, [_i(64), _i(64)], [])
    address = _bytes_address(module, encoded or b"\0", name)      # no empty global
    func.CallOp([], symbol, [address, const(types.int64, len(encoded))])


def _bytes_address(module: ir.Module, data: bytes, name: str) -> ir.Value:
    """The address (i64) of a constant global `name` holding `data`."""
    array = np.frombuffer(data, dtype=np.uint8).astype(np.int8)
    return to_i64(element_address(constant_global(module, name, array, _i(8))))


def print_end(module: ir.Module) -> None:
    func.CallOp([], declare_function(module, PRINT_END_SYMBOL, [], []), [])


# -- print() in prange bodies and kernels: one printf call per line -----------
#
# The host's callbacks need the interpreter lock, which the thread that called
# the function holds while the loop's workers run; so parallel code formats
# with printf, as numba.cuda's print does: integers %lld/%llu, floats %f, and
# booleans True/False (the line's format chosen at run time). On the GPU it is
# gpu.printf (CUDA's vprintf, flushed when the host next synchronises); on the
# CPU, C's printf on file descriptor 1 (not sys.stdout), flushed per line.

PRINTF_SYMBOL = "printf"
PRINTF_TYPE = "!llvm.func<i32 (ptr, ...)>"
FFLUSH_SYMBOL = "fflush"
MAX_PRINTED_BOOLEANS = 4     # 2^4 format variants at most


def printf_line(module: ir.Module, items: list, gpu: bool, name: str) -> None:
    """`items`: ("text", str) or (numba type, value). One line, spaces between."""
    booleans = [value for kind, value in items if isinstance(kind, types.Boolean)]
    numbers = [(kind, value) for kind, value in items
               if kind != "text" and not isinstance(kind, types.Boolean)]

    def emit(truths: list) -> None:
        pieces, truth = [], iter(truths)
        for kind, value in items:
            if kind == "text":
                pieces.append(value.replace("%", "%%"))
            elif isinstance(kind, types.Boolean):
                pieces.append("True" if next(truth) else "False")
            elif isinstance(kind, types.Integer):
                pieces.append("%lld" if kind.signed else "%llu")
            else:
                pieces.append("%f")
        _printf(module, " ".join(pieces) + "\n", [_printf_argument(k, v) for k, v in numbers],
                gpu, name + "".join("_t" if t else "_f" for t in truths))

    def choose(truths: list) -> None:
        if len(truths) == len(booleans):
            emit(truths)
            return
        branch = scf.IfOp(booleans[len(truths)], [], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            choose(truths + [True])
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            choose(truths + [False])
            scf.YieldOp([])

    choose([])


def _printf_argument(ty: types.Type, value: ir.Value) -> ir.Value:
    if isinstance(ty, types.Integer):
        return cast(value, ty, types.int64 if ty.signed else types.uint64)
    return cast(value, ty, types.float64)


def _printf(module: ir.Module, text: str, arguments: list, gpu: bool, name: str) -> None:
    if gpu:
        gpu_dialect.PrintfOp(text, arguments)
        return
    pointer = ir.Type.parse("!llvm.ptr")
    _declare_c(module, PRINTF_SYMBOL, PRINTF_TYPE)
    _declare_c(module, FFLUSH_SYMBOL, "!llvm.func<i32 (ptr)>")
    address = _bytes_address(module, text.encode("utf-8") + b"\0", name)
    fmt = llvm.IntToPtrOp(pointer, address).result
    llvm.CallOp(_i(32), [fmt] + arguments, [], [], callee=PRINTF_SYMBOL,
                var_callee_type=ir.TypeAttr.get(ir.Type.parse(PRINTF_TYPE)))
    everything = llvm.ZeroOp(pointer).result          # fflush(NULL): every C stream
    llvm.CallOp(_i(32), [everything], [], [], callee=FFLUSH_SYMBOL)


def _declare_c(module: ir.Module, symbol: str, function_type: str) -> None:
    if symbol in ir.SymbolTable(module.operation):
        return
    with ir.InsertionPoint.at_block_begin(module.body):
        llvm.LLVMFuncOp(symbol, ir.TypeAttr.get(ir.Type.parse(function_type)))
