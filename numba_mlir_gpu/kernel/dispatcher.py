"""`@kernel` and its launches: `k[global_size, local_size](*args)`.

A launch runs a small host function our `njit` compiles per argument
kinds: `launch(g0, g1, g2, l0, l1, l2, *args)` (launch.py lowers its one
call), so argument
placement (NumPy arrays copied to the GPU and back, device arrays used in
place), typing per argument types and the compiled-code cache are the
njit dispatcher's.

Sizes: an int or a tuple of 1 to 3 ints; the local size has as many dims
as the global size, or is omitted (then chosen here: at most 256 items).
Groups per dim: ceil(global / local). Work-items past the global size run
nothing; the last group along a dim may be partial, and its barriers and
collectives count only its items (launch.py).
"""
from __future__ import annotations

import math
from typing import Optional

import numba
import numpy as np
from numba.core import types

from ..api import njit
from . import rules, typing
from .launch import KernelLaunch

# the typing and lowering of the kernel API, registered when imported
REGISTERED = (rules, typing)
SIZE_NAMES = ["g0", "g1", "g2", "l0", "l1", "l2"]
MAX_GROUPS = (2 ** 31 - 1, 65535, 65535)     # a CUDA grid's dimensions
DEFAULT_ITEMS = {1: (256,), 2: (16, 16), 3: (8, 8, 4)}


class KernelLaunchError(ValueError):
    """A launch whose sizes the kernel cannot run with."""


def split_launch(config) -> tuple:
    """(global size, local size or None) of `k[config]`, for the compiled
    kernel and the simulator alike: k[g, l] (two items; l may be None),
    k[g] with g an int or a tuple of 1 or 3 ints. Python makes k[(n, m)]
    k[n, m], so a 2-d global size with the local size left to us is
    k[(n, m), None] or k[(n, m),]."""
    if isinstance(config, tuple) and len(config) == 2:
        return config
    if isinstance(config, tuple) and len(config) == 1:
        return config[0], None
    return config, None


def _sizes(value, what: str) -> tuple:
    if isinstance(value, (int, np.integer)):
        value = (int(value),)
    if not isinstance(value, tuple) or not 1 <= len(value) <= 3 or \
            not all(isinstance(v, (int, np.integer)) for v in value):
        raise KernelLaunchError(f"the {what} size must be an int or a tuple of 1 to 3 ints, "
                                f"not {value!r}")
    if any(v < 0 for v in value) or (what == "local" and any(v < 1 for v in value)):
        raise KernelLaunchError(f"the {what} size {value!r} has a dimension that is too small")
    return tuple(int(v) for v in value)


_UNCACHED = object()


def _kind(value):
    """What Numba's typing of `value` depends on, cheaply (arrays: class,
    dtype, dimensions, layout and flags; else the class; None: ask Numba)."""
    cls = type(value)
    if cls is np.ndarray:
        dtype = value.dtype           # builtin dtypes by number: hashing a dtype is slow
        return (cls, dtype.num if dtype.isbuiltin == 1 else dtype, value.ndim, value.flags.num)
    if hasattr(value, "_c_contiguous"):          # CuPy (frontend/dispatch.py's fast path)
        dtype = value.dtype
        return (cls, dtype.num if dtype.isbuiltin == 1 else dtype, value.ndim,
                value._c_contiguous, value._f_contiguous)
    flags = getattr(value, "flags", None)
    if flags is not None and hasattr(value, "dtype") and hasattr(value, "ndim"):
        try:
            return (type(value), value.dtype, value.ndim, bool(flags.c_contiguous),
                    bool(flags.f_contiguous), bool(getattr(flags, "writeable", True)),
                    bool(getattr(flags, "aligned", True)))
        except AttributeError:
            pass
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return type(value)
    return _UNCACHED                    # anything else (tuples...): typed by Numba each time


class Kernel:
    """A kernel function; `k[global_size]` or `k[global_size, local_size]`
    gives a launch to call with the kernel's arguments."""

    def __init__(self, py_func, target: Optional[str] = None, **options):
        self.py_func = py_func
        self.target = target
        self.options = options
        self._launch = KernelLaunch(py_func)
        self._launchers: dict = {}       # number of arguments -> njit dispatcher
        self._compiled: set = set()      # launcher signatures compiled
        self._plans: dict = {}           # _kind of each argument -> dispatcher
        self._configs: dict = {}         # k[...]'s key -> KernelLaunchConfig (launches repeat)
        self.__name__ = py_func.__name__
        self.__doc__ = py_func.__doc__

    def __repr__(self) -> str:
        return f"<kernel {self.py_func.__qualname__}>"

    def __call__(self, *args, **kwargs):
        raise TypeError(f"launch the kernel {self.__name__} as "
                        f"{self.__name__}[global_size, local_size](...)")

    def __getitem__(self, config) -> "KernelLaunchConfig":
        try:
            return self._configs[config]
        except (KeyError, TypeError):
            pass
        made = self._configure(config)
        try:
            if len(self._configs) < 64:
                self._configs[config] = made
        except TypeError:
            pass
        return made

    def _configure(self, config) -> "KernelLaunchConfig":
        global_size, local_size = split_launch(config)
        return KernelLaunchConfig(self, _sizes(global_size, "global"),
                                  None if local_size is None else _sizes(local_size, "local"))

    # -- compilation ---------------------------------------------------------

    def launcher(self, nargs: int):
        """The njit dispatcher of `launch(g0, g1, g2, l0, l1, l2, *args)`."""
        fn = self._launchers.get(nargs)
        if fn is None:
            names = ", ".join(SIZE_NAMES + [f"a{i}" for i in range(nargs)])
            source = (f"def launch_{self.__name__}({names}):\n"
                      f"    kernel_launch({names})\n")
            namespace = {"kernel_launch": self._launch}
            exec(source, namespace)
            fn = self._launchers[nargs] = njit(target=self.target, fallback=False,
                                               **self.options)(namespace[f"launch_{self.__name__}"])
        return fn

    def signature(self, args) -> tuple:
        return (types.int64,) * 6 + tuple(numba.typeof(a) for a in args)

    def compile(self, *args):
        """Compile for arguments like `args`; returns (dispatcher, signature)."""
        dispatcher = self.launcher(len(args))
        sig = self.signature(args)
        if sig not in self._compiled:
            dispatcher.compile(sig)
            self._compiled.add(sig)
        return dispatcher, sig

    def plan(self, args):
        """The launcher's dispatcher for arguments like `args`, cached by a
        cheap key of their kinds (launches repeat)."""
        key = tuple(map(_kind, args))
        found = self._plans.get(key)
        if found is None:
            found = self.compile(*args)[0]
            if _UNCACHED not in key:
                self._plans[key] = found
        return found

    def inspect_mlir(self, *args, stage: str = "input") -> str:
        from ..api import inspect_mlir
        dispatcher, sig = self.compile(*args)
        return inspect_mlir(dispatcher, sig, stage=stage)

    def inspect_ptx(self, *args) -> list:
        from ..api import inspect_ptx
        dispatcher, sig = self.compile(*args)
        return inspect_ptx(dispatcher, sig)


class KernelLaunchConfig:
    def __init__(self, kernel: Kernel, global_size: tuple, local_size: Optional[tuple]):
        if local_size is not None and len(local_size) != len(global_size):
            raise KernelLaunchError(f"the local size {local_size} and the global size "
                                    f"{global_size} have different numbers of dimensions")
        self.kernel, self.global_size, self.local_size = kernel, global_size, local_size
        self.sizes = self.resolve()

    def __call__(self, *args):
        dispatcher = self.kernel.plan(args)
        if self.sizes:                           # () for an empty launch
            dispatcher(*self.sizes, *args)
        return None

    def resolve(self) -> tuple:
        """The six sizes the launcher takes (global, local, padded to 3-d),
        () when there is nothing to run; KernelLaunchError for sizes no
        kernel can run with."""
        local = self.local_size or self.choose_local()
        if math.prod(local) > rules.MAX_GROUP_ITEMS:
            raise KernelLaunchError(f"the local size {local} has more than "
                                    f"{rules.MAX_GROUP_ITEMS} work-items")
        groups = [-(-g // l) for g, l in zip(self.global_size, local)]
        if any(n > limit for n, limit in zip(groups, MAX_GROUPS)):
            raise KernelLaunchError(f"{groups} work-groups: at most {MAX_GROUPS} per dimension")
        if math.prod(self.global_size) == 0:
            return ()
        pad = (1,) * (3 - len(local))
        return tuple(self.global_size) + pad + tuple(local) + pad

    def choose_local(self) -> tuple:
        default = DEFAULT_ITEMS[len(self.global_size)]
        return tuple(max(1, min(g, d)) for g, d in zip(self.global_size, default))


def kernel(py_func=None, *, target: Optional[str] = None, fastmath=False,
           fp64: Optional[str] = None, **options):
    """`@kernel` or `@kernel(target=..., fastmath=..., fp64=...)`: a kernel
    launched as `k[global_size, local_size](*args)`; `target` as our njit's
    ("cpu", "gpu", "compile-only"; default: the GPU when there is one)."""
    if fp64 is not None:
        options["fp64"] = fp64
    if fastmath:
        options["fastmath"] = fastmath

    def make(fn):
        return Kernel(fn, target=target, **options)
    return make if py_func is None else make(py_func)
