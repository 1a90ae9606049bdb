"""What an ahead-of-time folder holds, read without loading any code."""
from __future__ import annotations

import glob
import os
import pickle
from dataclasses import dataclass

from .._mlir import ir, new_context
from ..compiler.gpu_binaries import described
from ..compiler.jit import Reload
from .store import STAMP


@dataclass
class Entry:
    index_file: str
    signature: str
    # per GPU module: (architecture, "SASS" | "PTX", the object's bytes)
    objects: list


def contents(folder: str) -> list[Entry]:
    from numba.core.caching import IndexDataCacheFile
    entries = []
    for index in sorted(glob.glob(os.path.join(folder, "*.nbi"))):
        base = os.path.basename(index)[:-len(".nbi")]
        cache_file = IndexDataCacheFile(folder, base, STAMP)
        for key, name in cache_file._load_index().items():
            with open(cache_file._data_path(name), "rb") as f:
                payload = _WithoutEnvironments(f).load()
            reloads = [r for r in payload[7] if isinstance(r, Reload)]     # reload_init
            entries.append(Entry(os.path.basename(index), str(key[0]),
                                 [m for r in reloads for m in _objects(r.llvm_mlir)]))
    return entries


class _WithoutEnvironments(pickle.Unpickler):
    """Numba's environments import the function's module when unpickled:
    not needed to read the GPU objects."""

    def find_class(self, module, name):
        if (module, name) == ("numba.core.environment", "_rebuild_env"):
            return lambda *args: None
        return super().find_class(module, name)


def _objects(text: str) -> list:
    with new_context(), ir.Location.unknown():
        return described(ir.Module.parse(text))
