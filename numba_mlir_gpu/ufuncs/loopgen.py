"""Python source of the loop nests that apply a kernel element by element.

Each ufunc call runs one function compiled by our own `njit`, so it goes
through the same MLIR pipeline as any user function (one fused kernel on the
GPU, one parallel loop nest on the CPU). The functions are generated as
source because their shape depends on the call: how many dimensions the
result has, which operands are scalars, which broadcast. Nested `prange`
loops are merged into one parallel loop nest by our lowering
(parallel/collapse.py). Broadcasting is index arithmetic, `min(i, n - 1)`,
which reads index 0 of a length-1 dimension: no broadcast views, no copies,
and the same code for NumPy and device arrays.

Element types come from the chosen loop (signatures.Loop): every operand is
converted to its type explicitly (`_c0(x)`, NumPy's scalar type), so that the kernel call is
typed with exactly that loop's types, whatever the arrays hold.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from numba import prange


@dataclass(frozen=True)
class Operand:
    """How an operand reaches the loop: a scalar (ndim None), or an array
    of `ndim` loop dimensions (its last ones), `broadcast` if any of them
    may be 1 where the loop's is not; `core` trailing core dimensions
    (gufuncs); `as_array`: a gufunc's () operand passed as a 1-element array."""
    ndim: Optional[int]
    broadcast: bool = False
    core: int = 0
    as_array: bool = False


def _indices(name: str, op: Operand, loop_ndim: int) -> list[str]:
    """Index expressions of `name`'s loop dimensions in a loop over
    i0..i{loop_ndim-1}."""
    first = loop_ndim - op.ndim
    return [f"min(i{first + d}, {name}.shape[{d}] - 1)" if op.broadcast else f"i{first + d}"
            for d in range(op.ndim)]


def _nest(lines: list[str], bound: str, loop_ndim: int) -> str:
    """Open loop_ndim nested prange loops over `bound`'s first dimensions;
    returns the body's indentation."""
    indent = "    "
    for d in range(loop_ndim):
        lines.append(f"{indent}for i{d} in prange({bound}.shape[{d}]):")
        indent += "    "
    return indent


def _shape(prefix: str, ndim: int) -> tuple[list[str], str]:
    """Parameters n0, n1, ... of a shape and the tuple they make. Sizes are
    passed as NumPy integers, one by one: our dispatcher's shortcut for
    device arrays (frontend/dispatch.py) takes numbers, not tuples."""
    names = [f"{prefix}{d}" for d in range(ndim)]
    return names, "(" + "".join(f"{n}, " for n in names) + ")"


def shape_arguments(shape) -> list:
    """A shape as the generated functions take it."""
    return [np.int64(s) for s in shape]


def _compile(source: str, name: str, env: dict, njit_options: Optional[dict]):
    from ..api import njit
    scope = {"np": np, "prange": prange, **env}
    exec(compile(source, f"<numba_mlir_gpu.ufuncs {name}>", "exec"), scope)
    fn = scope[name]
    fn.__source__ = source      # for error reports and tests
    # without options: the plain function, for our lowering to compile into
    # a caller (a call inside compiled code)
    return fn if njit_options is None else njit(**njit_options)(fn)


def elementwise(ufunc, loop, operands: Sequence[Operand], loop_ndim: int, allocate: bool,
                njit_options: Optional[dict]):
    """`out[i...] = ufunc(a0[i...], a1[i...], ...)`; with `allocate`, the
    function takes the result's shape and returns a new array of the loop's
    output type, else it takes `out` (any type: stores convert) and returns
    it (as a ufunc called with out= in compiled code does)."""
    names = [f"a{k}" for k in range(len(operands))]
    sizes, shape = _shape("n", loop_ndim)
    params = names + (sizes if allocate else ["out"])
    lines = [f"def _elementwise({', '.join(params)}):"]
    if allocate:
        lines.append(f"    out = np.empty({shape}, _odt)")
    indent = _nest(lines, "out", loop_ndim)
    args = []
    for k, (name, op) in enumerate(zip(names, operands)):
        value = name if op.ndim is None else f"{name}[{', '.join(_indices(name, op, loop_ndim))}]"
        args.append(f"_c{k}({value})")
    where = ", ".join(f"i{d}" for d in range(loop_ndim))
    lines.append(f"{indent}out[{where}] = _uf({', '.join(args)})")
    lines.append("    return out")
    env = {"_uf": ufunc, "_odt": loop.output_dtypes[0].type,
           **{f"_c{k}": d.type for k, d in enumerate(loop.input_dtypes)}}
    return _compile("\n".join(lines) + "\n", "_elementwise", env, njit_options)


def reduce_last_axis(ufunc, loop, ndim: int, njit_options: dict):
    """out[i...] = a[i..., 0] op a[i..., 1] op ... in order, over the last
    axis of an `ndim`-dimensional `a` (ndim >= 2), for each of the others
    in parallel."""
    lead = ", ".join(f"i{d}" for d in range(ndim - 1))
    sizes, shape = _shape("n", ndim - 1)
    lines = [f"def _reduce(a, {', '.join(sizes)}):",
             f"    out = np.empty({shape}, _odt)",
             f"    length = a.shape[{ndim - 1}]"]
    indent = _nest(lines, "out", ndim - 1)
    lines += [f"{indent}acc = _ct(a[{lead}, 0])",
              f"{indent}for k in range(1, length):",
              f"{indent}    acc = _ct(_uf(_c0(acc), _c1(a[{lead}, k])))",
              f"{indent}out[{lead}] = acc",
              "    return out"]
    return _compile("\n".join(lines) + "\n", "_reduce", _reduce_env(ufunc, loop), njit_options)


def reduce_chunks(ufunc, loop, njit_options: dict):
    """out[j] = the in-order reduction of a[j*c : (j+1)*c], each chunk in
    parallel: one level of the reduction of a 1-D array (the kernel is any
    function, so the parallel-loop reductions of our lowering, which know
    +, *, min and max, do not apply)."""
    source = """\
def _reduce_chunks(a, m, c):
    out = np.empty(m, _odt)
    n = a.shape[0]
    for j in prange(m):
        lo = j * c
        hi = min(lo + c, n)
        acc = _ct(a[lo])
        for k in range(lo + 1, hi):
            acc = _ct(_uf(_c0(acc), _c1(a[k])))
        out[j] = acc
    return out
"""
    return _compile(source, "_reduce_chunks", _reduce_env(ufunc, loop), njit_options)


def reduce_strided(ufunc, loop, njit_options: dict):
    """out[j] = a[j] op a[j + m] op a[j + 2m] ..., each j in parallel: one
    level of the reduction of a 1-D array for a ufunc NumPy may reorder
    (one with an identity): neighbouring iterations read neighbouring
    elements (coalesced loads on the GPU)."""
    source = """\
def _reduce_strided(a, m):
    out = np.empty(m, _odt)
    n = a.shape[0]
    for j in prange(m):
        acc = _ct(a[j])
        for k in range(j + m, n, m):
            acc = _ct(_uf(_c0(acc), _c1(a[k])))
        out[j] = acc
    return out
"""
    return _compile(source, "_reduce_strided", _reduce_env(ufunc, loop), njit_options)


def _reduce_env(ufunc, loop) -> dict:
    return {"_uf": ufunc, "_odt": loop.output_dtypes[0].type, "_ct": loop.output_dtypes[0].type,
            "_c0": loop.input_dtypes[0].type, "_c1": loop.input_dtypes[1].type}


def _kernel_arguments(names: Sequence[str], operands: Sequence[Operand],
                      loop_ndim: int) -> list[str]:
    """The kernel's arguments at loop index i0..: each operand's core part."""
    args = []
    for name, op in zip(names, operands):
        if op.ndim is None:
            args.append(name)
            continue
        index = _indices(name, op, loop_ndim)
        if op.as_array:
            # a () operand the kernel takes as a 1-element array
            last = index.pop()
            index.append(f"{last}:{last} + 1")
        index += [":"] * op.core
        args.append(f"{name}[{', '.join(index)}]" if index else name)
    return args


def gufunc_loop(kernel, operands: Sequence[Operand], nin: int, loop_ndim: int,
                allocate: Optional[Sequence] = None, njit_options: Optional[dict] = None):
    """kernel(a0[i..., :], ..., out0[i..., :], ...) for each loop index i
    in parallel; the outputs (with the loop's and their core dimensions)
    are the last operands. With `allocate` ((NumPy scalar type, ndim) of
    each output), the function takes the outputs' shapes instead and returns
    the new outputs. loop_ndim >= 1."""
    nout = len(operands) - nin
    names = [f"a{k}" for k in range(nin)] + [f"out{k}" for k in range(nout)]
    shapes = [_shape(f"s{k}_", ndim) for k, (_, ndim) in enumerate(allocate or ())]
    params = names[:nin] + ([n for sizes, _ in shapes for n in sizes] if allocate
                            else names[nin:])
    lines = [f"def _gufunc({', '.join(params)}):"]
    if allocate:
        lines += [f"    out{k} = np.empty({shape}, _odt{k})" for k, (_, shape) in enumerate(shapes)]
    indent = _nest(lines, names[nin], loop_ndim)
    args = _kernel_arguments(names, operands, loop_ndim)
    lines.append(f"{indent}_k({', '.join(args)})")
    if allocate:
        lines.append(f"    return {', '.join(names[nin:])}{',' if nout == 1 else ''}")
    env = {"_k": kernel, **{f"_odt{k}": t for k, (t, _) in enumerate(allocate or ())}}
    return _compile("\n".join(lines) + "\n", "_gufunc", env, njit_options or {})


def gufunc_in_compiled_code(kernel, inputs: Sequence[Operand], out_core: Sequence[tuple],
                            core_sources: dict, out_dtypes: Optional[Sequence]):
    """The Python function a gufunc call inside one of our compiled
    functions is lowered as (not compiled by itself: our lowering compiles
    it into the caller's module). Its loop dimensions are the inputs'
    broadcast (the largest size of each: sizes are not checked there);
    `core_sources`: output core dimension -> (input, axis) giving its size.
    With `out_dtypes` it makes and returns the outputs, else it takes them."""
    nin, nout = len(inputs), len(out_core)
    loop_ndim = max([op.ndim for op in inputs if op.ndim is not None] + [0])
    names = [f"a{k}" for k in range(nin)] + [f"out{k}" for k in range(nout)]
    params = names[:nin] if out_dtypes is not None else names
    lines = [f"def _gufunc_call({', '.join(params)}):"]
    sizes = []
    for d in range(loop_ndim):
        each = [f"a{k}.shape[{d - (loop_ndim - op.ndim)}]" for k, op in enumerate(inputs)
                if op.ndim is not None and d >= loop_ndim - op.ndim]
        sizes.append(each[0] if len(each) == 1 else f"max({', '.join(each)})")
    run = sizes or ["1"]           # no loop dimensions: one iteration
    if out_dtypes is not None:
        for k, dims in enumerate(out_core):
            core = [f"a{core_sources[d][0]}.shape[{core_sources[d][1]}]" for d in dims]
            lines.append(f"    out{k} = np.empty(({''.join(f'{n}, ' for n in run + core)}), "
                         f"_odt{k})")
    # (without loop dimensions, the outputs are made with a leading axis of 1)
    ops = list(inputs) + [Operand(loop_ndim or 1, False, len(dims), as_array=not dims)
                          for dims in out_core]
    indent = "    "
    for d, size in enumerate(run):
        lines.append(f"{indent}for i{d} in prange({size}):")
        indent += "    "
    lines.append(f"{indent}_k({', '.join(_kernel_arguments(names, ops, len(run)))})")
    if out_dtypes is not None:
        results = [f"out{k}[0]" if loop_ndim == 0 and not dims else
                   (f"out{k}[0, {', '.join([':'] * len(dims))}]" if loop_ndim == 0 else f"out{k}")
                   for k, dims in enumerate(out_core)]
        lines.append(f"    return {', '.join(results)}")
    env = {"_k": kernel, **{f"_odt{k}": t for k, t in enumerate(out_dtypes or ())}}
    return _compile("\n".join(lines) + "\n", "_gufunc_call", env, None)
