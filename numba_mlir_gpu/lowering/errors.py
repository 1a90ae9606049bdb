"""Errors raised while lowering Numba IR to MLIR."""
from __future__ import annotations

from typing import Optional

from numba.core import errors, ir


class UnsupportedConstructError(errors.UnsupportedError):
    """A construct the MLIR lowering does not handle.

    Numba prints the location it carries (file and line of the user's
    source), so the message names only the construct.
    """

    def __init__(self, construct: str, loc: Optional[ir.Loc] = None):
        super().__init__(
            f"numba-mlir-gpu does not support {construct}", loc=loc)
        self.construct = construct


class MLIRCompilationError(errors.NumbaError):
    """MLIR rejected the module we generated (a bug in this package)."""


def user_name(name: str) -> str:
    """The source variable of an SSA-versioned name ('acc.2' -> 'acc');
    Numba's temporaries ('$12load') as they are."""
    return name if name.startswith("$") else name.partition(".")[0]


class NeedsPlainKernel(UnsupportedConstructError):
    """A GPU loop body run in chunks (targets/gpu/chunks.py), where a block's
    threads share each iteration, holds what only one thread per iteration
    can run: a call of a function that may write an array it is given (each
    thread would run it whole). The parfor lowering then runs the loop as a
    plain kernel (parallel/parfors.py); where it cannot (array reductions),
    this is the error."""


class NeedsDeviceHeap(NeedsPlainKernel):
    """A GPU loop body run in chunks (targets/gpu/chunks.py) makes an array
    that cannot be a scratch slot sized before the kernel: a size from the
    data, or an array made by a called function. The parfor lowering then
    runs the loop as a plain kernel whose threads allocate on the device
    heap (parallel/parfors.py); where it cannot (array reductions), this is
    the error."""
