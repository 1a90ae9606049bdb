"""Configuration of this repository's own tests (not of other test suites run
from inside the checkout, such as the libraries' under .libraries/, which
take their target from the environment)."""
import os

# Differential tests pick their target explicitly; keep the environment out.
os.environ.pop("NUMBA_MLIR_GPU_TARGET", None)
