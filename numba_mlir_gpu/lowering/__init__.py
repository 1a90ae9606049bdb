"""The lowering core: typed Numba IR -> MLIR (func, arith, math, cf, scf, memref).

`ModuleLowering` lowers an entry function and its callees into one module;
`FunctionLowerer` lowers one function, block by block, statement by
statement, looking up each operation in the registries (registry.py). The
core imports no rule module: the rules (`numba_mlir_gpu.rules`) and the
parfor statement (`numba_mlir_gpu.parallel`) register themselves when their
packages are imported. What the core provides them: values and types,
builders, casts, arrays and indexing, loops, broadcasting, errors.
"""
from __future__ import annotations

from . import expressions, statements  # noqa: F401  (register the IR's own rules)
from .function import FunctionLowerer
from .module import ModuleLowering

__all__ = ["FunctionLowerer", "ModuleLowering"]
