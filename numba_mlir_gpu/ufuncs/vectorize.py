"""`numba_mlir_gpu.vectorize`: element-wise kernels as NumPy-like ufuncs.

A `UFunc` is a Numba `DUFunc` (so that Numba's array-expression rewrite and
parfor pass take a call of it on arrays inside compiled code for a ufunc,
and fuse it into the caller's loops), with Numba's machinery replaced where
it would compile CPU code: typing picks among our signatures and infers
return types without compiling, the kernel is lowered by our lowering into
the caller (templates.py), and a call from Python runs a generated loop
compiled by our njit (loopgen.py) instead of NumPy's ufunc loop.
"""
from __future__ import annotations

import functools
from typing import Callable, Optional, Sequence

import numpy as np
from numba import jit, types
from numba.core import errors
from numba.core.extending import is_jitted
from numba.core.typing import npydecl
from numba.core.typing.templates import signature
from numba.np.ufunc import ufuncbuilder
from numba.np.ufunc.dufunc import DUFunc

from . import loopgen, operands, signatures, templates
from .options import njit_options
from .reduce import reduce as _reduce
from .signatures import Loop


class UFunc(DUFunc):
    """A ufunc whose loops our MLIR pipeline compiles (see `vectorize`)."""

    def __init__(self, py_func: Callable, sigs: Sequence = (), identity=None,
                 target: Optional[str] = None, **options):
        if is_jitted(py_func):
            py_func = py_func.py_func
        self._py_func = py_func
        self._loops: list[Loop] = []
        self._compiled: dict = {}
        self._plans: dict = {}
        self._in_code: dict = {}        # argument types -> loop lowered into a caller
        self._njit = njit_options("vectorize", target, options)
        with ufuncbuilder._suppress_deprecation_warning_nopython_not_supplied():
            # DUFunc's base needs a ufunc-target dispatcher (for nin and the
            # name); it never compiles here: _compile_for_argtys is ours
            dispatcher = jit(_target="npyufunc")(py_func)
        self._initialize(dispatcher, identity)
        functools.update_wrapper(self, py_func)
        self._eager = bool(sigs)
        for sig in sigs:
            self.add(sig)

    # -- signatures ---------------------------------------------------------

    def add(self, sig) -> Loop:
        """Add the loop for one signature ("float64(float64, float64)"; the
        return type may be left out and is then inferred)."""
        args, ret = signatures.parse(sig)
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}: signature {sig!r} has {len(args)} arguments, "
                            f"the kernel takes {self.nin}")
        for ty in args + ((ret,) if ret is not None else ()):
            if not isinstance(ty, (types.Number, types.Boolean)):
                raise TypeError(f"{self.__name__}: signature {sig!r}: vectorize takes scalar "
                                f"types, not {ty}")
        if ret is None:
            ret = signatures.infer_return_type(self._py_func, args)
        loop = Loop(args, (ret,))
        if loop not in self._loops:
            self._loops.append(loop)
        return loop

    @property
    def types(self) -> list[str]:
        """The loops, as NumPy's `ufunc.types` lists them ("dd->d")."""
        return ["".join(d.char for d in loop.input_dtypes) + "->"
                + "".join(d.char for d in loop.output_dtypes) for loop in self._loops]

    @property
    def ntypes(self) -> int:
        return len(self._loops)

    @property
    def nout(self) -> int:
        return 1

    @property
    def nargs(self) -> int:
        return self.nin + 1

    @property
    def signatures(self) -> list[Loop]:
        return list(self._loops)

    @property
    def dispatchers(self) -> list:
        """The njit dispatchers of the loops compiled so far (for
        numba_mlir_gpu.inspect_mlir / inspect_ptx)."""
        return list(self._compiled.values())

    def _loop_for(self, values: Sequence, dtypes: Sequence[np.dtype]) -> Loop:
        loop = signatures.match(self._loops, values, dtypes)
        if loop is not None:
            return loop
        if self._eager:
            raise TypeError(
                f"{self.__name__}: no matching signature for input types "
                f"({', '.join(str(d) for d in dtypes)}); compiled: "
                + ", ".join(str(lp) for lp in self._loops))
        return self.add(tuple(signatures.numba_types(dtypes)))

    # -- Numba typing (inside compiled code) ---------------------------------

    def _install_type(self, typingctx=None):
        template = templates.install(self, self.__name__, self._type_me, self._implementation)
        self._install_ufunc_attributes(template)
        self._install_ufunc_methods(template)

    def _compile_for_argtys(self, argtys, return_type=None):
        raise errors.NumbaTypeError(f"{self.__name__}: no loop for {argtys}")

    def _type_me(self, argtys, kwtys):
        if kwtys:
            raise errors.NumbaTypeError(f"{self.__name__}: keyword arguments in compiled code")
        base, explicit_outputs, ndims, layout = npydecl.Numpy_rules_ufunc._handle_inputs(
            self.ufunc, argtys, kwtys)
        ewise = tuple(types.unliteral(t) for t in base[:self.nin])
        try:
            loop = self._loop_for([None] * len(ewise),
                                  [np.dtype(signatures.as_dtype(t)) for t in ewise])
        except (TypeError, NotImplementedError) as exc:
            raise errors.NumbaTypeError(str(exc)) from None
        if explicit_outputs:
            return signature(explicit_outputs[0], *argtys)
        if ndims == 0:
            # a scalar call: the arguments convert to the loop's types
            return signature(loop.outputs[0], *loop.inputs)
        return signature(types.Array(loop.outputs[0], ndims, layout), *argtys)

    def _implementation(self, argtys: tuple):
        """The kernel for a call on scalars; for one on arrays that Numba's
        array-expression rewrite left as a call (an explicit output), a loop
        into the output, lowered into the caller (sizes are not checked
        there: an input's length-1 dimensions broadcast)."""
        if all(isinstance(t, (types.Number, types.Boolean)) for t in argtys):
            return self._py_func
        if len(argtys) != self.nin + 1 or not isinstance(argtys[-1], types.Array):
            return None
        made = self._in_code.get(argtys)
        if made is None:
            made = self._in_code[argtys] = self._loop_into(argtys)
        return made

    def _loop_into(self, argtys: tuple):
        out_ty = argtys[-1]
        ewise = [types.unliteral(t.dtype if isinstance(t, types.Array) else t)
                 for t in argtys[:self.nin]]
        loop = self._loop_for([None] * self.nin, [np.dtype(signatures.as_dtype(t))
                                                  for t in ewise])
        ops = tuple(loopgen.Operand(t.ndim, True) if isinstance(t, types.Array)
                    else loopgen.Operand(None) for t in argtys[:self.nin])
        if any(op.ndim is not None and op.ndim > out_ty.ndim for op in ops) or out_ty.ndim == 0:
            return None
        return loopgen.elementwise(self, loop, ops, out_ty.ndim, False, None)

    # -- calls from Python ---------------------------------------------------

    def __call__(self, *args, out=None, **kws):
        if kws:
            raise TypeError(f"{self.__name__}: unsupported keyword arguments "
                            f"{', '.join(sorted(kws))}")
        if len(args) == self.nin + 1 and out is None:
            args, out = args[:-1], args[-1]
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__} takes {self.nin} inputs, got {len(args)}")
        if isinstance(out, tuple):
            if len(out) != 1:
                raise TypeError(f"{self.__name__}: out must hold one array")
            (out,) = out
        key = operands.call_key(args, out)
        plan = self._plans.get(key) if key is not None else None
        if plan is None:
            values = [operands.normalise(a) for a in args]
            plan = self._plan(values, out)
            if key is not None:
                if len(self._plans) >= _PLANS:
                    self._plans.clear()
                self._plans[key] = plan
            args = values
        return plan(args, out)

    def _plan(self, values: list, out) -> "_Plan":
        """How calls with operands like these run: the loop, the compiled
        function and the reshapes around it (kept per operand types, shapes
        and strides, so that a repeated call skips the checks)."""
        loop = self._loop_for(values, [signatures.dtype_of(v) for v in values])
        shape = operands.broadcast_shape([operands.shape_of(v) for v in values])
        if out is not None:
            _check_out(self.__name__, out, shape, loop.output_dtypes[0])
        arrays = [v for v in values if operands.is_array(v)]
        if len(shape) == 0:
            # one element: a 1-element loop (device 0-d arrays as length 1)
            loop_shape = (1,)
        elif len(shape) > 1 and all(operands.c_contiguous(a) and tuple(a.shape) == shape
                                    for a in arrays + ([out] if out is not None else [])):
            # same shape, contiguous: one flat loop over the elements
            loop_shape = (int(np.prod(shape, dtype=np.int64)),)
        else:
            loop_shape = shape
        ndim = len(loop_shape)
        ops = []
        for v in values:
            if operands.is_array(v):
                v_ndim = ndim if loop_shape != shape else v.ndim
                v_shape = loop_shape if loop_shape != shape else tuple(v.shape)
                ops.append(loopgen.Operand(v_ndim, v_shape != loop_shape[ndim - v_ndim:]))
            else:
                ops.append(loopgen.Operand(None))
        fn = self._elementwise(loop, tuple(ops), ndim, allocate=out is None)
        return _Plan(fn, shape, loop_shape, tuple(op.ndim is not None for op in ops),
                     tuple(loopgen.shape_arguments(loop_shape)))

    def _elementwise(self, loop, ops, ndim, allocate):
        key = ("elementwise", loop, ops, ndim, allocate)
        fn = self._compiled.get(key)
        if fn is None:
            fn = self._compiled[key] = loopgen.elementwise(self, loop, ops, ndim, allocate,
                                                           self._njit)
        return fn

    def _reduction_loop(self, kind: str, loop: Loop, ndim: int = 1):
        key = (kind, loop, ndim)
        fn = self._compiled.get(key)
        if fn is None:
            fn = (loopgen.reduce_chunks(self, loop, self._njit) if kind == "chunks"
                  else loopgen.reduce_strided(self, loop, self._njit) if kind == "strided"
                  else loopgen.reduce_last_axis(self, loop, ndim, self._njit))
            self._compiled[key] = fn
        return fn

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims: bool = False,
               initial=None):
        """NumPy's `ufunc.reduce` for one axis or all (axis=None)."""
        return _reduce(self, array, axis, dtype, out, keepdims, initial)

    def accumulate(self, *args, **kws):
        raise NotImplementedError(f"{self.__name__}.accumulate: not provided (reduce is)")

    def reduceat(self, *args, **kws):
        raise NotImplementedError(f"{self.__name__}.reduceat: not provided (reduce is)")

    def outer(self, a, b, out=None):
        """NumPy's `ufunc.outer` for two-input ufuncs: r[i..., j...] =
        f(a[i...], b[j...]), one call on `a` viewed with b.ndim trailing
        unit dims, broadcast against `b`."""
        if self.nin != 2:
            raise ValueError(f"{self.__name__}.outer: only for ufuncs of two inputs")
        a, b = operands.normalise(a), operands.normalise(b)
        b_ndim = len(operands.shape_of(b))
        if operands.is_array(a) and b_ndim:
            a = a.reshape(tuple(a.shape) + (1,) * b_ndim)
        return self(a, b, out=out)

    def at(self, *args, **kws):
        raise NotImplementedError(f"{self.__name__}.at: not provided")

    def __repr__(self) -> str:
        return f"<numba_mlir_gpu.UFunc {self.__name__!r}>"

    def _reduce_states(self):
        raise TypeError("numba_mlir_gpu ufuncs cannot be pickled")


# Plans kept per ufunc (the oldest go all at once past this many)
_PLANS = 256


class _Plan:
    """One call shape of a UFunc: its compiled loop and the reshapes
    around it."""

    def __init__(self, fn, shape: tuple, loop_shape: tuple, arrays: tuple, sizes: tuple):
        self.fn, self.shape, self.loop_shape = fn, shape, loop_shape
        self.reshape = loop_shape != shape
        self.arrays, self.sizes = arrays, sizes

    def __call__(self, values, out):
        if self.reshape:
            values = [v.reshape(self.loop_shape) if is_array else v
                      for v, is_array in zip(values, self.arrays)]
        if out is not None:
            self.fn(*values, out.reshape(self.loop_shape) if self.reshape else out)
            return out
        result = self.fn(*values, *self.sizes)
        if not self.shape:
            return result[0] if isinstance(result, np.ndarray) else result.reshape(())
        return result.reshape(self.shape) if self.reshape else result


def _check_out(name: str, out, shape: tuple, result: np.dtype) -> None:
    if not operands.is_array(out):
        raise TypeError(f"{name}: out must be an array, not {type(out).__name__}")
    if tuple(out.shape) != shape:
        raise ValueError(f"{name}: out has shape {tuple(out.shape)}, the result {shape}")
    if not np.can_cast(result, out.dtype, "same_kind"):
        raise TypeError(f"{name}: cannot cast the result ({result}) to out's {out.dtype} "
                        "with casting rule 'same_kind'")


def vectorize(ftylist_or_function=(), identity=None, target: Optional[str] = None, **options):
    """Numba's `vectorize` compiling through our MLIR pipeline.

    `@vectorize` or `@vectorize()`: loops are compiled lazily for the input
    types of each call; `@vectorize(["float64(float64, float64)", ...])`:
    those signatures only, a call picking the first its inputs cast to
    safely. `target` is our njit's ("cpu", "gpu", "compile-only"; default:
    $NUMBA_MLIR_GPU_TARGET, else the GPU when present). Other options:
    `identity` (for `reduce` of empty arrays), `fastmath`, and Numba's
    `nopython`, `cache` (accepted, no effect)."""
    if callable(ftylist_or_function) and not isinstance(ftylist_or_function, (str, list, tuple)):
        return UFunc(ftylist_or_function, (), identity, target, **options)
    sigs = ftylist_or_function
    if isinstance(sigs, str) or not isinstance(sigs, (list, tuple)):
        sigs = [sigs]

    def wrap(fn) -> UFunc:
        return UFunc(fn, sigs, identity, target, **options)
    return wrap
