"""Numba typing for ufunc objects called inside compiled functions.

Numba types a global object it knows by a typing template registered for
that object (`insert_user_function`). Ours add `_get_impl`, the hook our
lowering asks of a callee's template for the Python function that
implements a call (lowering/calls.jitted_implementation): the kernel's
Python function, which the lowering compiles into the caller's MLIR module
and calls from the caller's loop (inlined into the caller's kernel on the
GPU). No separate machine code is made for the kernel.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Callable, Optional

from numba.core.registry import cpu_target
from numba.core.typing.templates import AbstractTemplate


def install(obj, name: str, generic: Callable, implementation: Callable[[tuple], Optional[Callable]]):
    """Type calls of `obj` by `generic(argtypes, kwtypes)`; lower them as a
    call of `implementation(argtypes)` (a Python function, or None where
    there is none). Returns the template class."""

    def _generic(self, args, kws):
        return generic(args, kws)

    def _get_impl(self, args, kws):
        py_func = None if kws else implementation(tuple(args))
        if py_func is None:
            return None, None
        return SimpleNamespace(py_func=py_func), args

    template = type(f"MLIRUFuncTyping_{name}", (AbstractTemplate,),
                    {"key": obj, "generic": _generic, "_get_impl": _get_impl})
    cpu_target.typing_context.insert_user_function(obj, template)
    return template
