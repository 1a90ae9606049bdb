"""Options of `vectorize` and `guvectorize`: Numba's, with `target` as in
our `njit`."""
from __future__ import annotations

from typing import Optional

from ..targets.choice import TARGETS

# Numba's target names, for code written for numba.vectorize
_ALIASES = {"parallel": "cpu", "cuda": "gpu"}

# Numba options that only say what is always so here (nopython code), or
# that we cannot honour for generated loops (cache: the loops have no file)
_ACCEPTED = {"nopython", "forceobj", "cache", "boundscheck", "nogil"}
# Options passed on to the njit of the loops
_PASSED = {"fastmath", "error_model"}
_OURS = {"fallback", "fp64", "unsupported_loops"}


def njit_options(name: str, target: Optional[str], options: dict) -> dict:
    """The keyword arguments of our `njit` for the loops of a ufunc."""
    target = _ALIASES.get(target, target)
    if target is not None and target not in TARGETS:
        raise ValueError(f"{name}: unknown target {target!r}; expected one of "
                         f"{', '.join(TARGETS)}")
    unknown = set(options) - _ACCEPTED - _PASSED - _OURS
    if unknown:
        raise TypeError(f"{name}: unexpected options {', '.join(sorted(unknown))}")
    if options.get("forceobj"):
        raise ValueError(f"{name}: forceobj=True is not supported (kernels are compiled)")
    njit = {k: v for k, v in options.items() if k in _PASSED | _OURS}
    njit["target"] = target
    return njit
