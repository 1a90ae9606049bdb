"""np.dot, np.matmul and `@`: on 1-D and 2-D arrays, and (np.matmul, `@`)
batches of products with a 3-D operand. In host code, products of one BLAS
type call BLAS (lowering/blas.py): matrix products and their batches on
either target, matrix-vector and vector products on the CPU; the rest, and
all products inside parallel bodies, are our own loops, which run as GPU
kernels too.

Each output element accumulates its products sequentially, in the element
type and in index order; the outputs are computed in parallel. A vector dot
product has one output: it is a parallel sum with the target's
deterministic partials. Numba types these only with SciPy installed (its
BLAS check); rewrites.py keeps np.dot away from Numba's parfor swap.
"""
from __future__ import annotations

import operator

import numpy as np
from numba.core import types

from .._mlir import arith, ir, scf
from ..lowering.arrays import allocate, load_element, shape_of, store_element
from ..lowering import blas, complexes
from ..lowering.build import cmpi, const, const_index, select
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import parallel_for
from ..lowering.registry import binop_rules, call_rules
from ..lowering.substitutes import matmul
from ..lowering.values import ArrayValue
from ..parallel.folds import fold_box
from ..parallel.reduction import Reduction

_KINDS = {(1, 1): "vector * vector", (2, 1): "matrix * vector",
          (1, 2): "vector * matrix", (2, 2): "matrix * matrix"}


def _common_length(lw, a_len: ir.Value, b_len: ir.Value, kind: str) -> ir.Value:
    """The contracted length; unequal lengths raise Numba's ValueError after
    the statement, the loops meanwhile running over the shorter one."""
    lw.errors.raise_if(lw, cmpi("ne", a_len, b_len), lw.errors.code(
        ValueError, (f"incompatible array sizes for np.dot(a, b) ({kind})",)))
    return select(cmpi("ult", a_len, b_len), a_len, b_len)


def _vector_dot(lw, a: ArrayValue, b: ArrayValue, dtype) -> ir.Value:
    total = Reduction("dot", dtype, operator.add, 0)
    n = _common_length(lw, shape_of(a)[0], shape_of(b)[0], _KINDS[1, 1])
    if _through_cpu_blas(lw, a, b, dtype):
        return blas.dot(lw, a, b, n, dtype)

    def step(indices, accs):
        x, y = load_element(a, indices), load_element(b, indices)
        return [total.combine(accs[0], _product(x, y, a, b, dtype))]
    (result,) = fold_box(lw, [n], [total], step)
    return result


def _product(x, y, a, b, dtype):
    x, y = cast(x, a.type.dtype, dtype), cast(y, b.type.dtype, dtype)
    if isinstance(dtype, types.Complex):
        return complexes.mul(x, y, dtype)
    return (arith.MulFOp if isinstance(dtype, types.Float) else arith.MulIOp)(x, y).result


def _contract(lw, a: ArrayValue, b: ArrayValue, result_ty: types.Array) -> ArrayValue:
    """Matrix-vector, vector-matrix and matrix-matrix products."""
    kind = _KINDS[a.type.ndim, b.type.ndim]
    a_shape, b_shape = shape_of(a), shape_of(b)
    length = _common_length(lw, a_shape[-1], b_shape[0], kind)
    rows = a_shape[:-1]            # [] or [m]
    cols = b_shape[1:]             # [] or [n]
    if _through_blas(lw, a, b, result_ty):
        return blas.gemm(lw, a, b, rows[0], cols[0], length, result_ty)
    if _through_cpu_blas(lw, a, b, result_ty.dtype):
        if a.type.ndim == 2:
            return blas.gemv(lw, a, b, rows[0], length, result_ty, vector_first=False)
        return blas.gemv(lw, b, a, length, cols[0], result_ty, vector_first=True)
    out = allocate(lw, result_ty, rows + cols)

    def body(indices):
        i, j = indices[:len(rows)], indices[len(rows):]
        store_element(_summed_products(a, i, b, [], j, length, result_ty.dtype), out, indices)
    parallel_for(lw, rows + cols, body)
    return out


def _summed_products(a: ArrayValue, a_index: list, b: ArrayValue, b_before: list,
                     b_after: list, length: ir.Value, dtype) -> ir.Value:
    """The sum over k < length of a[a_index + [k]] * b[b_before + [k] +
    b_after], in `dtype` and in index order."""
    adder = Reduction("dot", dtype, operator.add, 0)
    loop = scf.ForOp(const_index(0), length, const_index(1), [const(dtype, 0)])
    with ir.InsertionPoint(loop.body):
        k = loop.induction_variable
        x = load_element(a, a_index + [k])
        y = load_element(b, b_before + [k] + b_after)
        scf.YieldOp([adder.combine(loop.inner_iter_args[0], _product(x, y, a, b, dtype))])
    return loop.results[0]


def _through_blas(lw, a: ArrayValue, b: ArrayValue, result_ty: types.Array) -> bool:
    """Matrix-matrix products (and batches of them) in host code, of one
    BLAS type, go to the target's BLAS (SciPy's on the CPU, as Numba's do; cuBLAS on the GPU where
    it is found); parallel bodies keep the loops."""
    return (lw.target.library_gemm() and a.type.ndim >= 2 and b.type.ndim >= 2
            and _blas_operands(lw, a, b, result_ty.dtype))


def _through_cpu_blas(lw, a: ArrayValue, b: ArrayValue, dtype) -> bool:
    """Matrix-vector and vector products in CPU host code, of one BLAS type,
    call Numba's gemv and dot helpers, as Numba's np.dot does (GPU host code
    keeps our kernels for them)."""
    return not lw.target.gpu and _blas_operands(lw, a, b, dtype)


def _blas_operands(lw, a: ArrayValue, b: ArrayValue, dtype) -> bool:
    """In host code (not a parallel body), both operands of one BLAS type."""
    return (lw.parallel_depth == 0 and a.type.dtype == b.type.dtype == dtype
            and blas.has_gemm(dtype))


def _batched(lw, a: ArrayValue, b: ArrayValue, result_ty: types.Array) -> ArrayValue:
    """np.matmul / `@` with a 3-d operand: a batch of products, NumPy's
    rules. A batch of one (or a 2-d operand) serves every product; a 1-d
    operand is a vector (no rows, or no columns, in the result)."""
    a_shape, b_shape = shape_of(a), shape_of(b)
    one = const_index(1)
    a_batch = a_shape[0] if a.type.ndim == 3 else one
    b_batch = b_shape[0] if b.type.ndim == 3 else one
    lw.errors.raise_if(lw, arith.AndIOp(cmpi("ne", a_batch, b_batch), arith.AndIOp(
        cmpi("ne", a_batch, one), cmpi("ne", b_batch, one)).result).result, lw.errors.code(
            ValueError, ("matmul: the batch dimensions of the operands do not broadcast",)))
    batch = select(cmpi("eq", a_batch, one), b_batch, a_batch)   # 1 stretches, even to 0
    rows = [a_shape[-2]] if a.type.ndim >= 2 else []
    cols = [b_shape[-1]] if b.type.ndim >= 2 else []
    length = _common_length(lw, a_shape[-1], b_shape[-2] if b.type.ndim >= 2 else b_shape[0],
                            "batched")
    if _through_blas(lw, a, b, result_ty):
        return blas.batched_gemm(lw, a, b, batch, rows[0], cols[0], length, result_ty)
    out = allocate(lw, result_ty, [batch] + rows + cols)
    zero = const_index(0)

    def member(batch_extent, p):
        """Product p's matrix of an operand with this batch extent."""
        return [select(cmpi("eq", batch_extent, one), zero, p)]

    def body(indices):
        p, i, j = indices[0], indices[1:1 + len(rows)], indices[1 + len(rows):]
        a_at = member(a_batch, p) if a.type.ndim == 3 else []
        b_at = member(b_batch, p) if b.type.ndim == 3 else []
        store_element(_summed_products(a, a_at + i, b, b_at, j, length, result_ty.dtype),
                      out, indices)
    parallel_for(lw, [batch] + rows + cols, body)
    return out


@binop_rules.register(operator.matmul)
@call_rules.register(np.dot)
@call_rules.register(matmul)
def dot(lw, args, sig, expr):
    if len(args) != 2 or not all(isinstance(v, ArrayValue) for v in args):
        raise UnsupportedConstructError(
            f"np.dot/@ of {', '.join(str(t) for t in sig.args)} (two 1-D or 2-D arrays only)",
            expr.loc)
    a, b = args
    result_ty = types.unliteral(sig.return_type)
    if 3 in (a.type.ndim, b.type.ndim) and isinstance(result_ty, types.Array):
        return _batched(lw, a, b, result_ty)
    if (a.type.ndim, b.type.ndim) not in _KINDS:
        raise UnsupportedConstructError(f"np.dot/@ of {a.type} and {b.type}", expr.loc)
    if isinstance(result_ty, types.Array):
        return _contract(lw, a, b, result_ty)
    return _vector_dot(lw, a, b, result_ty)
