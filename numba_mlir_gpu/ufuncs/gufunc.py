"""`numba_mlir_gpu.guvectorize`: kernels over core dimensions as gufuncs.

The kernel takes each operand's core part (`(n)`: a 1-D view, `()`: a
scalar input, or a 1-element array for outputs) and writes its outputs, as
with Numba's guvectorize. A call runs one loop over the loop dimensions
(the inputs' leading dimensions, broadcast together) compiled by our njit
(loopgen.gufunc_loop); the kernel's body is inlined into that loop's body,
one GPU kernel or parallel CPU loop nest for the whole call.
"""
from __future__ import annotations

import functools
from typing import Callable, Optional, Sequence

import numba
import numpy as np
from numba.core import types
from numba.core.extending import is_jitted

from . import in_compiled_code, layouts, loopgen, operands, signatures, templates
from .options import njit_options
from .signatures import Loop


def _inlined(py_func: Callable):
    """The kernel as the generated loop calls it: a Numba dispatcher with
    inline="always", so that Numba's untyped passes put its body into the
    loop's body (it is never compiled by itself). Its inner loops are then
    loops of the prange body, which our GPU lowering runs with a block of
    threads per loop iteration (design.md, "Structured kernels"); a call
    would run them serially in one thread."""
    return numba.njit(inline="always")(py_func)


class GUFunc:
    """A generalized ufunc whose loops our MLIR pipeline compiles (see
    `guvectorize`)."""

    def __init__(self, py_func: Callable, sigs: Sequence, layout: str,
                 target: Optional[str] = None, **options):
        if is_jitted(py_func):
            py_func = py_func.py_func
        options.pop("writable_args", None)       # every output is written in place anyway
        self._py_func = py_func
        self.layout = layouts.parse(layout)
        self.nin, self.nout = len(self.layout.inputs), len(self.layout.outputs)
        self._njit = njit_options("guvectorize", target, options)
        self._kernel = _inlined(py_func)
        self._loops: list[Loop] = []
        self._compiled: dict = {}
        self._plans: dict = {}
        self._eager = bool(sigs)
        functools.update_wrapper(self, py_func)
        templates.install(self, py_func.__name__, *in_compiled_code.typing(self))
        for sig in sigs:
            self.add(sig)

    @property
    def signature(self) -> str:
        return str(self.layout)

    @property
    def nargs(self) -> int:
        return self.nin + self.nout

    @property
    def dispatchers(self) -> list:
        return list(self._compiled.values())

    def add(self, sig) -> Loop:
        """Add one signature: "void(float64[:], float64[:], float64[:])" or a
        tuple of types, the inputs' then the outputs'."""
        args, ret = signatures.parse(sig)
        if ret not in (None, types.none):
            raise TypeError(f"{self.__name__}: a guvectorize signature returns nothing; "
                            f"{sig!r} returns {ret}")
        if len(args) != self.nargs:
            raise TypeError(f"{self.__name__}: signature {sig!r} has {len(args)} arguments, "
                            f"layout {self.layout} has {self.nargs}")
        for ty, dims in zip(args, self.layout.inputs + self.layout.outputs):
            core = ty.ndim if isinstance(ty, types.Array) else 0
            if dims and core != len(dims):
                raise TypeError(f"{self.__name__}: {ty} in {sig!r} does not have the "
                                f"{len(dims)} core dimensions ({','.join(dims)}) of the layout")
        loop = Loop(args[:self.nin], args[self.nin:])
        if loop not in self._loops:
            self._loops.append(loop)
        return loop

    def _loop_for(self, values, dtypes, out_dtypes) -> Loop:
        loop = signatures.match(self._loops, values, dtypes)
        if loop is not None:
            return loop
        if self._eager or out_dtypes is None:
            raise TypeError(
                f"{self.__name__}: no matching signature for input types "
                f"({', '.join(str(d) for d in dtypes)})"
                + ("; compiled: " + ", ".join(str(lp) for lp in self._loops) if self._eager
                   else "; without signatures, pass the outputs (out=) to compile one"))

        def typed(dtype, dims, is_input):
            ty = signatures.numba_types([dtype])[0]
            if not dims and is_input:
                return ty
            return types.Array(ty, max(len(dims), 1), "A")
        ins = [typed(d, dims, True) for d, dims in zip(dtypes, self.layout.inputs)]
        outs_t = [typed(d, dims, False) for d, dims in zip(out_dtypes, self.layout.outputs)]
        return self.add(tuple(ins + outs_t))

    def __call__(self, *args, out=None, **kws):
        if kws:
            raise TypeError(f"{self.__name__}: unsupported keyword arguments "
                            f"{', '.join(sorted(kws))}")
        outs = None
        if len(args) == self.nargs and out is None:
            args, outs = args[:self.nin], tuple(args[self.nin:])
        elif out is not None:
            outs = tuple(out) if isinstance(out, tuple) else (out,)
        if len(args) != self.nin or (outs is not None and len(outs) != self.nout):
            raise TypeError(f"{self.__name__} takes {self.nin} inputs and {self.nout} outputs "
                            f"(layout {self.layout}), got {len(args)} inputs")
        key = operands.call_key(args + (outs or ()), None)
        key = key and (key, outs is None)
        plan = self._plans.get(key) if key else None
        if plan is None:
            values = [operands.normalise(a) for a in args]
            plan = self._plan(values, outs)
            if key:
                if len(self._plans) >= 256:
                    self._plans.clear()
                self._plans[key] = plan
            args = values
        return plan(args, outs)

    def _plan(self, values: list, outs) -> "_Plan":
        """How calls with operands like these run (kept per operand types,
        shapes and strides: a repeated call skips the checks)."""
        loop = self._loop_for(values, [signatures.dtype_of(v) for v in values],
                              None if outs is None else [signatures.dtype_of(o) for o in outs])
        converts = tuple(not operands.is_array(v) or v.ndim == 0 or v.dtype != d
                         for v, d in zip(values, loop.input_dtypes))
        values = [_as_loop_type(v, t) for v, t in zip(values, loop.inputs)]
        shapes = [operands.shape_of(v) for v in values]
        sizes = layouts.core_sizes(self.__name__, self.layout, shapes)
        loop_shape = operands.broadcast_shape(
            [s[:len(s) - len(dims)] for s, dims in zip(shapes, self.layout.inputs)],
            f"{self.__name__}: the loop dimensions of the inputs")
        out_shapes = self._out_shapes(loop_shape, sizes, outs, loop)
        # no loop dimensions: one iteration over a leading axis of 1
        run_shape = loop_shape or (1,)
        ndim = len(run_shape)
        ops = []
        for v, dims, ty in zip(values, self.layout.inputs, loop.inputs):
            if not operands.is_array(v):
                ops.append(loopgen.Operand(None))
                continue
            lead = v.ndim - len(dims)
            ops.append(loopgen.Operand(lead, tuple(v.shape[:lead]) != run_shape[ndim - lead:],
                                       len(dims), as_array=not dims and lead > 0 and
                                       isinstance(ty, types.Array)))
        for dims in self.layout.outputs:
            ops.append(loopgen.Operand(ndim, False, len(dims), as_array=not dims))
        fn = self._loop(tuple(ops), ndim, None if outs is not None else tuple(
            (d.type, ndim + len(dims)) for d, dims in zip(loop.output_dtypes, self.layout.outputs)))
        sizes_args = tuple(loopgen.shape_arguments(
            [n for s in out_shapes for n in run_shape + s[len(loop_shape):]]))
        return _Plan(fn, loop.inputs, converts, bool(loop_shape), tuple(out_shapes), sizes_args,
                     self.nout)

    def _out_shapes(self, loop_shape: tuple, sizes: dict, outs, loop: Loop) -> list:
        shapes = []
        for k, dims in enumerate(self.layout.outputs):
            if outs is None:
                missing = [d for d in dims if d not in sizes]
                if missing:
                    raise ValueError(f"{self.__name__}: output dimension {missing[0]!r} is not "
                                     "given by the inputs: pass the output (out=)")
                shapes.append(loop_shape + tuple(sizes[d] for d in dims))
                continue
            o = outs[k]
            if not operands.is_array(o):
                raise TypeError(f"{self.__name__}: outputs must be arrays, not "
                                f"{type(o).__name__}")
            core = tuple(o.shape[o.ndim - len(dims):]) if len(dims) <= o.ndim else None
            want = None if core is None else loop_shape + tuple(
                sizes.get(d, c) for d, c in zip(dims, core))
            if tuple(o.shape) != want:
                raise ValueError(f"{self.__name__}: output {k} has shape {tuple(o.shape)}, "
                                 f"expected {want} (loop dimensions {loop_shape}, layout "
                                 f"{self.layout})")
            if not np.can_cast(loop.output_dtypes[k], o.dtype, "same_kind"):
                raise TypeError(f"{self.__name__}: cannot cast output {k} "
                                f"({loop.output_dtypes[k]}) to {o.dtype}")
            shapes.append(want)
        return shapes

    def _loop(self, ops: tuple, ndim: int, allocate):
        key = (ops, ndim, allocate)
        fn = self._compiled.get(key)
        if fn is None:
            fn = self._compiled[key] = loopgen.gufunc_loop(
                self._kernel, ops, self.nin, ndim, allocate, self._njit)
        return fn

    def __repr__(self) -> str:
        return f"<numba_mlir_gpu.GUFunc {self.__name__!r} {self.layout}>"


class _Plan:
    """One call shape of a GUFunc: its compiled loop, the conversions and
    reshapes around it."""

    def __init__(self, fn, types_: tuple, converts: tuple, has_loop_dims: bool,
                 out_shapes: tuple, sizes: tuple, nout: int):
        self.fn, self.types, self.converts = fn, types_, converts
        self.has_loop_dims, self.out_shapes, self.sizes = has_loop_dims, out_shapes, sizes
        self.nout = nout

    def __call__(self, values, outs):
        if any(self.converts):
            values = [_as_loop_type(v, t) if c else v
                      for v, t, c in zip(values, self.types, self.converts)]
        if outs is not None:
            # without loop dimensions, the outputs get a leading axis of 1
            self.fn(*values, *(outs if self.has_loop_dims
                               else [o.reshape((1,) + tuple(o.shape)) for o in outs]))
            result = outs
        else:
            made = self.fn(*values, *self.sizes)
            result = tuple(_unpadded(m, s) for m, s in zip(made, self.out_shapes))
        return result[0] if self.nout == 1 else result


def _unpadded(made, shape: tuple):
    """A new output in its shape (without the leading axis of 1 a call
    without loop dimensions ran over); 0-d NumPy results as NumPy scalars."""
    if tuple(made.shape) != shape:
        made = made.reshape(shape)
    return made[()] if shape == () and isinstance(made, np.ndarray) else made


def _as_loop_type(value, ty):
    """An input in its loop's element type (arrays of another type are
    converted, a copy, as NumPy's gufuncs cast)."""
    dtype = signatures.Loop((ty,), ()).input_dtypes[0]
    if operands.is_array(value):
        if value.dtype != dtype:
            value = value.astype(dtype)
        if value.ndim == 0:
            value = value.reshape(1)       # a device 0-d array: one element
        return value
    value = dtype.type(value)
    if isinstance(ty, types.Array):
        return np.full(1, value, dtype)     # a () input the kernel takes as an array
    return value


def guvectorize(*args, target: Optional[str] = None, **options):
    """Numba's `guvectorize(signatures, layout)` compiling through our MLIR
    pipeline: `@guvectorize(["void(float64[:], float64[:], float64[:])"],
    "(n),(n)->()")`; `@guvectorize("(n)->(n)")` compiles lazily, for calls
    that pass their outputs. `target` as in our njit."""
    if len(args) == 1 and isinstance(args[0], str):
        sigs, layout = (), args[0]
    elif len(args) == 2:
        sigs, layout = args
        if isinstance(sigs, str) or not isinstance(sigs, (list, tuple)):
            sigs = [sigs]
    else:
        raise TypeError("guvectorize takes (signatures, layout) or (layout)")

    def wrap(fn) -> GUFunc:
        return GUFunc(fn, sigs, layout, target, **options)
    return wrap
