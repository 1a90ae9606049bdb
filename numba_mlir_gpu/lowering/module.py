"""One MLIR module: the entry function and every jitted function it calls."""
from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Callable

from numba.core import types
from numba.core.errors import NumbaError

from .._mlir import ir
from .argument_writes import written_arguments
from .errors import UnsupportedConstructError
from .fastmath import fastmath_flags
from .exceptions import ExceptionTable
from .function import FunctionLowerer


@dataclass
class Callee:
    name: str
    restype: types.Type
    argtypes: tuple
    param_types: list        # MLIR types of the flat parameters
    result_types: list       # MLIR types of the results after the status
    written: frozenset = frozenset()    # the arguments whose elements it may write
    # per returned array: the parameter returned unchanged, or None
    returned_arguments: tuple = ()
    # makes arrays on the GPU device heap (itself or a function it calls)
    allocates: bool = False
    # takes its caller's status cell last (FunctionLowerer.heap_status)
    status_cell: bool = False


@dataclass
class ModuleLowering:
    """`typed_ir(py_func, argtypes, typingctx, targetctx)` runs Numba's front
    end on a callee and returns its compiler state (frontend/typed_ir.py)."""
    module: ir.Module
    strategy: object
    typingctx: object
    targetctx: object
    typed_ir: Callable
    exceptions: ExceptionTable = field(default_factory=ExceptionTable)
    callees: dict = field(default_factory=dict)
    boundscheck: bool = False       # Numba's boundscheck option (indexing.in_bounds)
    error_model: str = "python"     # Numba's error_model option (rules/scalars.py)
    _in_progress: set = field(default_factory=set)
    _started: int = 0        # callees numbered in the order they were started
    # callee function name -> its own fastmath flags (None: IEEE), fastmath.py
    callee_fastmath: dict = field(default_factory=dict)
    # py_func -> the fastmath option of the dispatcher it came from
    dispatcher_fastmath: dict = field(default_factory=dict)
    # bitcode libraries of the device functions called (device_functions.py)
    device_libraries: set = field(default_factory=set)

    def lower_entry(self, state, name: str) -> FunctionLowerer:
        lowerer = FunctionLowerer(state, self, name, entry=True)
        lowerer.lower(self.module)
        return lowerer

    def callee(self, py_func, argtypes: tuple, in_kernel: bool, loc) -> Callee:
        """The (private) function lowered from `py_func` for `argtypes`;
        `in_kernel` functions run their loops serially, and on the GPU
        make their arrays on the device heap (targets/gpu/heap.py)."""
        key = (py_func, argtypes, in_kernel)
        if key in self.callees:
            return self.callees[key]
        if key in self._in_progress:
            raise UnsupportedConstructError(f"recursive calls ({py_func.__qualname__})", loc)
        self._in_progress.add(key)
        try:
            try:
                state = self.typed_ir(py_func, argtypes, self.typingctx, self.targetctx)
            except (TypeError, NumbaError) as exc:
                first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                raise UnsupportedConstructError(
                    f"compiling the implementation {py_func.__qualname__} ({first_line})",
                    loc) from None
            self._started += 1
            # only [A-Za-z0-9_]: NVPTX refuses other characters in symbols (`<lambda>`)
            base = re.sub(r"[^A-Za-z0-9_]", "_", py_func.__name__)
            name = f"{base}_{self._started}_{'k' if in_kernel else 'h'}"
            self.callee_fastmath[name] = fastmath_flags(self.dispatcher_fastmath.get(py_func))
            lowerer = FunctionLowerer(state, self, name, entry=False,
                                      parallel_depth=1 if in_kernel else 0)
            fn = lowerer.lower(self.module)
            fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
            fn_type = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        finally:
            self._in_progress.discard(key)
        callee = Callee(name, state.return_type, tuple(state.args), list(fn_type.inputs),
                        list(fn_type.results[1:]), frozenset(written_arguments(state.func_ir)),
                        tuple(lowerer.returned_arguments or ()),
                        lowerer.allocates_on_device, lowerer.status_cell is not None)
        self.callees[key] = callee
        return callee
