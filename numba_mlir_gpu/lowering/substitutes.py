"""Functions that stand in for NumPy calls in functions of our pipeline.

Numba types `np.sum(a, axis=...)` by compiling its own implementation
through its native backend, which pulls in its string formatting for the
axis error: over a second on a process's first such call, for code our
pipeline never uses. frontend/rewrites.py puts the stand-in in place of the
callee before type inference, frontend/typing.py types it with Numba's own
rules for the result (without compiling anything), and rules/reductions.py
lowers it as np.sum. np.matmul is a NumPy ufunc, which Numba does not type
and whose calls its array-expression rewrite would take as element-wise;
its stand-in is typed by frontend/typing.py and lowered by rules/linalg.py.
The stand-ins are never called from Python.
"""
from __future__ import annotations


def sum_with_axis(a, axis=None, dtype=None):
    """np.sum(a, axis, dtype) inside a function compiled by our pipeline."""
    raise NotImplementedError("numba-mlir-gpu compiles this; it is not called from Python")


def matmul(a, b):
    """np.matmul(a, b) inside a function compiled by our pipeline."""
    raise NotImplementedError("numba-mlir-gpu compiles this; it is not called from Python")
