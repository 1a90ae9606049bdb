"""The Python side of `print(...)` in compiled host code
(lowering/printing.py): items gathered per thread, the line written to
sys.stdout when it ends, as Numba's print (str() of each value, spaces
between, a newline)."""
from __future__ import annotations

import ctypes
import sys
import threading

_line = threading.local()


def _items() -> list:
    if not hasattr(_line, "items"):
        _line.items = []
    return _line.items


@ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int32)
def _print_int(value, unsigned):
    _items().append(str(value & (2 ** 64 - 1) if unsigned else value))


@ctypes.CFUNCTYPE(None, ctypes.c_double)
def _print_float(value):
    _items().append(str(value))


@ctypes.CFUNCTYPE(None, ctypes.c_int32)
def _print_bool(value):
    _items().append(str(bool(value)))


@ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64)
def _print_text(address, length):
    _items().append(ctypes.string_at(address, length).decode("utf-8"))


@ctypes.CFUNCTYPE(None)
def _print_end():
    items, _line.items = _items(), []
    sys.stdout.write(" ".join(items) + "\n")


_CALLBACKS = (_print_int, _print_float, _print_bool, _print_text, _print_end)


def register_printing(engine, symbols: tuple) -> None:
    """`symbols`: the names of the int, float, bool, text and end functions."""
    for symbol, fn in zip(symbols, _CALLBACKS):
        engine.raw_register_runtime(symbol, ctypes.cast(fn, ctypes.c_void_p))
