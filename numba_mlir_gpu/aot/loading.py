"""Every dispatcher of ours looks in the ahead-of-time folders in use
(store.py) before compiling a signature."""
from __future__ import annotations

from numba.core import sigutils, types
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import Dispatcher
from numba.core.typing import signature

from ..frontend.caching import is_ours
from . import store


def _ahead_of_time_first(general):
    """Dispatcher.compile that, for our dispatchers, first looks in the
    ahead-of-time folders (aot/store.py): the signature itself, else one the
    arguments convert to safely (a build for `f8[:]` serves a C-contiguous
    float64 array), as Numba's dispatcher does with the signatures given to
    its decorator. Only that entry is loaded."""

    def compile(self, sig):
        if store.folders() and is_ours(self):
            with global_compiler_lock:
                args, _ = sigutils.normalize_signature(sig)
                args = tuple(args)
                if args in self.overloads:
                    return self.overloads[args].entry_point
                in_use = tuple(store.folders())
                seen, built = self.__dict__.get("_numba_mlir_gpu_aot", (None, None))
                if seen != in_use:      # first look, or folders added since
                    built = store.built_for(self)
                    self._numba_mlir_gpu_aot = (in_use, built)
                chosen = args if args in built else _safe_match(self, args, built)
                if chosen is not None:
                    if chosen not in self.overloads:
                        cres = built[chosen].read(chosen, self.targetctx)
                        self.targetctx.insert_user_function(cres.entry_point, cres.fndesc,
                                                            [cres.library])
                        self.add_overload(cres)
                    return self.overloads[chosen].entry_point
        return general(self, sig)

    compile.__doc__ = general.__doc__
    return compile


def _safe_match(dispatcher, args: tuple, built: dict):
    if not built:
        return None
    cases = [signature(types.none, *a) for a in built]
    match = dispatcher.typingctx.resolve_overload(dispatcher.py_func, cases, args, {},
                                                  unsafe_casting=False)
    return tuple(match.args) if match is not None else None


def install() -> None:
    if not getattr(Dispatcher.compile, "_numba_mlir_gpu", False):
        Dispatcher.compile = _ahead_of_time_first(Dispatcher.compile)
        Dispatcher.compile._numba_mlir_gpu = True


install()
