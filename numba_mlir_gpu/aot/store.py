"""Ahead-of-time builds on disk: Numba's cache format, in a folder of the
user's choosing, with a key that holds on another machine.

Numba's on-disk cache keys an entry by the host CPU (its machine code is
built for it), the source file's modification time and a path derived from
where the source lives; none of these survives a copy to another machine.
A build here keys by the function's bytecode and closure (as Numba does),
the platform triple, this package's version and settings, and the target
("gpu"); Numba's side of the entry is built for a generic x86-64 CPU
(builder.py), and our host code is MLIR text that the loading process JITs for
its own CPU. Bytecode differs between Python versions: build with the
Python and Numba versions that will run it.
"""
from __future__ import annotations

import os

from llvmlite import binding as ll
from numba.core.caching import IndexDataCacheFile

from ..frontend.caching import MLIRFunctionCache

ENV_AOT = "NUMBA_MLIR_GPU_AOT"
STAMP = "numba-mlir-gpu ahead-of-time build"
_FOLDERS: list[str] = []


class _Portable:
    """A codegen whose magic tuple names the platform only, not the CPU."""

    @staticmethod
    def magic_tuple():
        return (ll.get_process_triple(), "generic", "")


class AheadOfTimeCache(MLIRFunctionCache):
    """One function's entries in an ahead-of-time folder."""

    def __init__(self, py_func, pipeline: type, folder: str):
        super().__init__(py_func, pipeline)
        self._cache_path = folder
        self._cache_file = IndexDataCacheFile(folder, self._impl.filename_base, STAMP)

    def _index_key(self, sig, codegen):
        return super()._index_key(sig, _Portable())

    def write(self, args: tuple, cres) -> None:
        if not self._impl.check_cachable(cres):
            raise ValueError(f"{self._py_func.__qualname__}{args} cannot be saved: it refers to "
                             "objects Numba's cache cannot pickle (dynamic globals or lifted loops)")
        os.makedirs(self._cache_path, exist_ok=True)
        self._cache_file.save(self._index_key(args, None), self._impl.reduce(cres))

    def signatures(self) -> list[tuple]:
        """The argument types of every entry built for this function with
        these settings (other bytecode, versions or targets are skipped)."""
        return [key[0] for key in self._cache_file._load_index()
                if key == self._index_key(key[0], None)]

    def read(self, args: tuple, target_context):
        # as Numba's cache loads: without the registries refreshed, the
        # loaded wrapper crashes at its first call (seen on the H200)
        target_context.refresh()
        payload = self._cache_file.load(self._index_key(args, None))
        return None if payload is None else self._impl.rebuild(target_context, payload)


def use(folder: str) -> None:
    """Look for ahead-of-time builds in `folder` (before compiling anything
    that has none)."""
    folder = os.path.abspath(folder)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"no ahead-of-time build folder {folder!r}")
    if folder not in _FOLDERS:
        _FOLDERS.append(folder)


def folders() -> list[str]:
    """The folders of `use` and of $NUMBA_MLIR_GPU_AOT (os.pathsep-separated)."""
    listed = [f for f in os.environ.get(ENV_AOT, "").split(os.pathsep) if f]
    return _FOLDERS + [os.path.abspath(f) for f in listed if os.path.abspath(f) not in _FOLDERS]


def built_for(dispatcher) -> dict:
    """argument types -> the AheadOfTimeCache holding them, over the folders
    in use (the first folder wins)."""
    pipeline = dispatcher._compiler.pipeline_class
    found: dict = {}
    for folder in folders():
        cache = AheadOfTimeCache(dispatcher.py_func, pipeline, folder)
        for args in cache.signatures():
            found.setdefault(args, cache)
    return found
