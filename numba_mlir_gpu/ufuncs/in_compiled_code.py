"""A GUFunc called inside one of our compiled functions.

Numba types the call by a template (templates.py) whose implementation is
a generated Python function (loopgen.gufunc_in_compiled_code): outputs
made (or given), one prange loop over the loop dimensions, the kernel
inlined into its body. Our lowering compiles that function into the
caller's MLIR module, so the call is a parallel loop of the caller's code:
on the GPU a kernel of the caller's module, on the CPU a loop nest.
"""
from __future__ import annotations

import numpy as np
from numba.core import errors, types
from numba.core.typing.templates import signature

from . import loopgen
from .signatures import as_dtype


def typing(gufunc):
    """(generic, implementation) for templates.install."""
    made: dict = {}

    def generic(argtys, kwtys):
        if kwtys:
            raise errors.NumbaTypeError(f"{gufunc.__name__}: keyword arguments in compiled code")
        argtys = tuple(types.unliteral(t) for t in argtys)
        plan = _plan(gufunc, argtys)
        made[argtys] = plan[1]
        return signature(plan[0], *argtys)

    def implementation(argtys):
        return made.get(tuple(types.unliteral(t) for t in argtys))
    return generic, implementation


def _plan(gufunc, argtys: tuple):
    name, layout, nin, nout = gufunc.__name__, gufunc.layout, gufunc.nin, gufunc.nout
    if len(argtys) not in (nin, nin + nout):
        raise errors.NumbaTypeError(f"{name} takes {nin} inputs (and optionally {nout} "
                                    f"outputs), got {len(argtys)} arguments")
    ins, outs = argtys[:nin], argtys[nin:]
    dtypes = [np.dtype(as_dtype(t.dtype if isinstance(t, types.Array) else t)) for t in ins]
    out_dtypes = [np.dtype(as_dtype(t.dtype)) for t in outs] if outs else None
    try:
        loop = gufunc._loop_for([None] * nin, dtypes, out_dtypes)
    except TypeError as exc:
        raise errors.NumbaTypeError(str(exc)) from None
    ops, sources = [], {}
    for k, (ty, dims, declared) in enumerate(zip(ins, layout.inputs, loop.inputs)):
        if not isinstance(ty, types.Array):
            if dims:
                raise errors.NumbaTypeError(f"{name}: input {k} is a scalar, its layout has "
                                            f"core dimensions ({','.join(dims)})")
            ops.append(loopgen.Operand(None))
            continue
        lead = ty.ndim - len(dims)
        if lead < 0:
            raise errors.NumbaTypeError(f"{name}: input {k} has {ty.ndim} dimensions, its core "
                                        f"dimensions ({','.join(dims)}) need {len(dims)}")
        for pos, dim in enumerate(dims):
            sources.setdefault(dim, (k, lead + pos))
        ops.append(loopgen.Operand(lead, lead > 0, len(dims), as_array=not dims and lead > 0
                                   and isinstance(declared, types.Array)))
    loop_ndim = max([op.ndim for op in ops if op.ndim is not None] + [0])
    if outs:
        if loop_ndim == 0:
            raise errors.NumbaTypeError(f"{name}: in compiled code, outputs can be passed only "
                                        "to calls with loop dimensions")
        result = types.none
    else:
        missing = [d for dims in layout.outputs for d in dims if d not in sources]
        if missing:
            raise errors.NumbaTypeError(f"{name}: output dimension {missing[0]!r} is not given "
                                        "by the inputs")
        made = []
        for dtype, dims in zip(loop.outputs, layout.outputs):
            element = dtype.dtype if isinstance(dtype, types.Array) else dtype
            ndim = loop_ndim + len(dims)
            made.append(types.Array(element, ndim, "C") if ndim else element)
        result = made[0] if nout == 1 else types.Tuple(made)
    fn = loopgen.gufunc_in_compiled_code(
        gufunc._kernel, ops, layout.outputs, sources,
        None if outs else [d.type for d in loop.output_dtypes])
    return result, fn
