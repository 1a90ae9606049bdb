"""Numba's own implementations, compiled by its type inference while one of
our pipelines compiles a function: machine code made only when used.

Typing a call of a NumPy function, a builtin or a helper that Numba writes in
Python (@overload, @register_jitable) compiles that implementation for every
new signature, in full: lowered to LLVM IR, then optimised and compiled to
machine code, with every implementation it calls. Our lowering types such
callees again and lowers their source into the caller's MLIR (typed_ir.py),
so that machine code is never run from our functions; making it was about
half the compile time of a function such as `np.percentile`.

While one of our pipelines compiles (numba_fixes.active), therefore:

* an implementation of a `numba.*` module (not `numba.tests`) gets a
  `DeferredEntry` instead of machine code: it keeps the library, lowered and
  not finalised, and is what Numba's lowering of a caller looks the callee up
  by (`insert_user_function`). Called from Python, it finalises the library
  then, and calls the real entry.
* a library linking another does not finalise it at once: linking into the
  final module finalises it (`_get_module_for_linking`), when a caller that
  Numba lowers (the host fallback, a stock `njit` function compiled later)
  is itself finalised. Finalising a deferred implementation's library also
  sets its environment global, as `get_executable` does for the others (the
  code reads it to box values, to build an exception's arguments at run time).

User functions called from ours are compiled in full: Python calls them.
"""
from __future__ import annotations

from numba.core import codegen, cpu
from numba.core.dispatcher import _DispatcherBase

from . import numba_fixes


def _numba_own(fndesc) -> bool:
    module = fndesc.modname or ""
    return module.startswith("numba.") and not module.startswith("numba.tests")


class DeferredEntry:
    """The entry point of an implementation whose machine code is not made
    yet (the key Numba's lowering finds the callee by)."""

    def __init__(self, context, library, fndesc, env):
        self._made = None
        self._parts = (context, library, fndesc, env)
        library.__dict__.setdefault("_deferred_envs", []).append(
            (context.get_env_name(fndesc), env))

    def __call__(self, *args, **kwargs):
        if self._made is None:
            self._made = _get_executable(*self._parts)
        return self._made(*args, **kwargs)


_get_executable = cpu.CPUContext.get_executable
_add_linking_library = codegen.CPUCodeLibrary.add_linking_library
_add_overload = _DispatcherBase.add_overload
_finalize = codegen.CPUCodeLibrary.finalize


def get_executable(self, library, fndesc, env):
    if numba_fixes.active() and _numba_own(fndesc):
        return DeferredEntry(self, library, fndesc, env)
    return _get_executable(self, library, fndesc, env)


def add_linking_library(self, library):
    if not numba_fixes.active():
        return _add_linking_library(self, library)
    self._linking_libraries.append(library)


def finalize(self):
    _finalize(self)
    for name, env in self.__dict__.pop("_deferred_envs", ()):
        self.codegen.set_env(name, env)


def add_overload(self, cres):
    if isinstance(cres.entry_point, DeferredEntry):
        # Python calls reach it through _compile_for_args, which calls the entry
        # compile() returns: the C dispatcher takes only a made function
        self.overloads[tuple(cres.signature.args)] = cres
        return
    _add_overload(self, cres)


cpu.CPUContext.get_executable = get_executable
codegen.CPUCodeLibrary.add_linking_library = add_linking_library
codegen.CPUCodeLibrary.finalize = finalize
_DispatcherBase.add_overload = add_overload
