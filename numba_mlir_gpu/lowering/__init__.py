"""Typed Numba IR + parfors -> MLIR (func, arith, math, cf, scf, memref).

Importing this package registers every lowering rule.
"""
from __future__ import annotations

from ..target import TargetChoice
from . import (array_builders, arrays, control, elementwise, expressions, linalg,  # noqa: F401
               mathlib, npufuncs, parfors, reductions, scalars, scans, statements, views)
from .function import FunctionLowerer
from .module import ModuleLowering
from .targets import CPUStrategy, GPUStrategy


def strategy_for(choice: TargetChoice):
    return GPUStrategy() if choice.builds_gpu_code else CPUStrategy()


__all__ = ["FunctionLowerer", "ModuleLowering", "strategy_for"]
