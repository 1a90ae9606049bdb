"""Numba's parfors -> parallel loops, whatever the target.

Importing this package registers the lowering of the Parfor statement.
The target strategies (`numba_mlir_gpu.targets`) decide how the loops run;
this package never imports them.
"""
from . import parfors  # noqa: F401  (registers the Parfor statement rule)
