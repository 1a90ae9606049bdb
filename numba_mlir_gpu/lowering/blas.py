"""Products in host code through BLAS. On the CPU as Numba computes np.dot:
matrix, matrix-vector and vector products through Numba's `numba_xxgemm`,
`numba_xxgemv` and `numba_xxdot` helpers, which call SciPy's BLAS
(runtime/blas.py). On the GPU, matrix products through cuBLAS's gemm (a
batch of them through its strided-batched gemm), on the stream our kernels
use (runtime/cublas.py). Each engine resolves the symbols by name, so
cached code keeps working.

BLAS is column-major. The result C (m x n) is allocated C-ordered, so BLAS
computes its column-major view C^T = B^T A^T. An operand whose rows are
contiguous (stride 1 along axis 1) is, seen column-major, its own transpose
with the row stride as leading dimension; one whose columns are contiguous
is itself, with the column stride. Any other operand (a view with both
strides above 1) is copied C-ordered first. Which case holds is decided
when the code runs, from the strides, so transposed arrays and slices of
either order pass without copies.
"""
from __future__ import annotations

from numba.core import types

from .._mlir import arith, func, ir, memref, scf
from .arrays import allocate, copy_array, fill
from .build import (cmpi, const, const_index, declare_function, element_address, select,
                    to_i64)
from .types import scalar_type as element_type
from .values import ArrayValue

GEMM_SYMBOL = "numba_xxgemm"
GEMV_SYMBOL = "numba_xxgemv"
DOT_SYMBOL = "numba_xxdot"
CPU_SYMBOLS = {GEMM_SYMBOL: "xxgemm", GEMV_SYMBOL: "xxgemv", DOT_SYMBOL: "xxdot"}
CUBLAS_HANDLE_SYMBOL = "nmg_cublas_handle"
CUBLAS_GEMM_SYMBOLS = {"s": "cublasSgemm_v2", "d": "cublasDgemm_v2", "c": "cublasCgemm_v2",
                       "z": "cublasZgemm_v2"}
CUBLAS_BATCHED_SYMBOLS = {kind: f"cublas{kind.upper()}gemmStridedBatched" for kind in "sdcz"}
# every cuBLAS function generated code may call (the engine resolves them)
CUBLAS_SYMBOLS = frozenset([*CUBLAS_GEMM_SYMBOLS.values(), *CUBLAS_BATCHED_SYMBOLS.values()])
_KIND = {types.float32: "s", types.float64: "d", types.complex64: "c", types.complex128: "z"}


def has_gemm(dtype: types.Type) -> bool:
    return dtype in _KIND


def _i(bits: int) -> ir.Type:
    return ir.IntegerType.get_signless(bits)


def _char(c: str) -> ir.Value:
    return arith.ConstantOp(_i(8), ord(c)).result


class _Operand:
    """A 2-d array, or the matrices of a 3-d one, as BLAS reads it: the
    address of its first element, its leading dimension, whether its rows
    are contiguous, and the distance between its matrices (0 for a 2-d
    array or a batch of one, which every product of a batch then reads)."""

    def __init__(self, lw, array: ArrayValue):
        usable = arith.OrIOp(*(_layout(array.memref, rows) for rows in (True, False))).result
        source = _as_is_or_copied(lw, array, usable)
        self.row_major = _layout(source, rows=True)
        meta = memref.ExtractStridedMetadataOp(source).results
        self.address = to_i64(element_address(source, meta[1], _itemsize(array.type.dtype)))
        self.lead = to_i64(select(self.row_major, _lead(source, rows=True),
                                  _lead(source, rows=False)))
        self.batch_stride = to_i64(_batch_stride(meta, array.type.ndim))


def _batch_stride(meta, ndim: int) -> ir.Value:
    if ndim == 2:
        return const_index(0)
    extent, stride = meta[2], meta[2 + ndim]
    return select(cmpi("sle", extent, const_index(1)), const_index(0), stride)


def _matrix_axes(value: ir.Value) -> tuple[list, list]:
    """The extents and strides of the last two axes of a 2-d or 3-d memref."""
    meta = memref.ExtractStridedMetadataOp(value).results
    ndim = ir.MemRefType(value.type).rank
    sizes, strides = meta[2:2 + ndim], meta[2 + ndim:2 + 2 * ndim]
    return list(sizes[-2:]), list(strides[-2:])


def _as_is_or_copied(lw, array: ArrayValue, usable: ir.Value) -> ir.Value:
    """The array's memref where `usable` holds when the code runs, else a
    C-ordered copy of it (of the same memref type)."""
    strided = array.memref.type
    choice = scf.IfOp(usable, [strided], has_else=True)
    with ir.InsertionPoint(choice.then_block):
        scf.YieldOp([array.memref])
    with ir.InsertionPoint(choice.else_block):
        copy = copy_array(lw, array, array.type.copy(layout="C", readonly=False))
        scf.YieldOp([memref.CastOp(strided, copy.memref).result
                     if copy.memref.type != strided else copy.memref])
    return choice.results[0]


def _layout(value: ir.Value, rows: bool) -> ir.Value:
    """Are the rows (`rows`) or the columns of the matrix contiguous, a line
    after another at a positive distance of at least its length? An axis of
    extent 1 leaves its stride free (signed compares: a reversed view's
    negative stride is no leading dimension)."""
    extents, strides = _matrix_axes(value)
    inner, outer = (1, 0) if rows else (0, 1)
    one = const_index(1)
    unit = arith.OrIOp(cmpi("eq", strides[inner], one), cmpi("sle", extents[inner], one)).result
    apart = arith.OrIOp(cmpi("sge", strides[outer], arith.MaxSIOp(extents[inner], one).result),
                        cmpi("sle", extents[outer], one)).result
    return arith.AndIOp(unit, apart).result


def _lead(value: ir.Value, rows: bool) -> ir.Value:
    """The leading dimension of a matrix whose rows (`rows`) or columns are
    contiguous: the distance between them, or the line's length where there
    is one line."""
    extents, strides = _matrix_axes(value)
    inner, outer = (1, 0) if rows else (0, 1)
    one = const_index(1)
    return select(cmpi("sle", extents[outer], one), arith.MaxSIOp(extents[inner], one).result,
                  strides[outer])


def _itemsize(dtype: types.Type) -> int:
    return dtype.bitwidth // 8


def gemm(lw, a: ArrayValue, b: ArrayValue, m: ir.Value, n: ir.Value, k: ir.Value,
         result_ty: types.Array) -> ArrayValue:
    """A new C-ordered (m x n) array holding a (m x k) @ b (k x n); the three
    arrays share the element type `result_ty.dtype` (has_gemm)."""
    out = allocate(lw, result_ty, [m, n])
    failed = gemm_into(lw, a, b, element_address(out.memref),
                       arith.MaxUIOp(n, const_index(1)).result, m, n, k, result_ty.dtype)
    lw.errors.raise_if(lw, failed, failure_status(lw))
    return out


def failure_status(lw, routine: str = "gemm") -> ir.Value:
    return lw.errors.code(RuntimeError,
                          (f"{'cuBLAS' if lw.target.gpu else 'BLAS'} {routine} failed",))


def _raise_if_failed(lw, status: ir.Value, routine: str) -> None:
    """Numba's BLAS helpers return a negative status on failure."""
    lw.errors.raise_if(lw, cmpi("slt", status, arith.ConstantOp(_i(32), 0).result),
                       failure_status(lw, routine))


def gemm_into(lw, a: ArrayValue, b: ArrayValue, c_address: ir.Value, ldc: ir.Value,
              m: ir.Value, n: ir.Value, k: ir.Value, dtype: types.Type) -> ir.Value:
    """C[:m, :n] = a[:m, :k] @ b[:k, :n] into the row-major matrix at
    `c_address` whose rows are `ldc` elements apart; i1: the library failed."""
    x, y = _Operand(lw, a), _Operand(lw, b)
    alpha, beta = _scalars(lw, dtype)
    # C^T (n x m) = op(B) op(A): a row-major operand is its own transpose
    call = _cublas_call if lw.target.gpu else _blas_call
    status = call(lw, _KIND[dtype], y.row_major, x.row_major, n, m, k, alpha, y, x, beta,
                  to_i64(c_address), ldc)
    return cmpi("ne", status, arith.ConstantOp(_i(32), 0).result)


def _blas_call(lw, kind, a_plain, b_plain, m, n, k, alpha, a, b, beta, c, ldc) -> ir.Value:
    """numba_xxgemm (column-major; 'n' or 't' per operand); its status is
    negative on failure, reported as nonzero here."""
    i64, i8 = _i(64), _i(8)
    symbol = declare_function(lw.mlower.module, GEMM_SYMBOL,
                              [i8, i8, i8] + [i64] * 11, [_i(32)])
    status = func.CallOp([_i(32)], symbol, [
        _char(kind), select(a_plain, _char("n"), _char("t")),
        select(b_plain, _char("n"), _char("t")), to_i64(m), to_i64(n), to_i64(k),
        alpha, a.address, a.lead, b.address, b.lead, beta, c, to_i64(ldc)]).result
    return arith.MinSIOp(status, arith.ConstantOp(_i(32), 0).result).result


def _cublas_call(lw, kind, a_plain, b_plain, m, n, k, alpha, a, b, beta, c, ldc) -> ir.Value:
    """cublas<kind>gemm_v2 on this process's handle (host pointers for alpha
    and beta, 32-bit sizes)."""
    i64, i32 = _i(64), _i(32)
    symbol = declare_function(lw.mlower.module, CUBLAS_GEMM_SYMBOLS[kind],
                              [i64, i32, i32, i32, i32, i32, i64, i64, i32, i64, i32, i64,
                               i64, i32], [i32])
    return func.CallOp([i32], symbol, [
        _cublas_handle(lw), _cublas_op(a_plain), _cublas_op(b_plain), _narrow(m), _narrow(n),
        _narrow(k), alpha, a.address, _narrow(a.lead), b.address, _narrow(b.lead), beta, c,
        _narrow(ldc)]).result


def _cublas_handle(lw) -> ir.Value:
    i64 = _i(64)
    return func.CallOp([i64], declare_function(lw.mlower.module, CUBLAS_HANDLE_SYMBOL, [],
                                               [i64]), []).result


def _cublas_op(plain: ir.Value) -> ir.Value:
    """CUBLAS_OP_N (0) for an operand read as it is, CUBLAS_OP_T (1) else."""
    return arith.ExtUIOp(_i(32), arith.XOrIOp(plain, arith.ConstantOp(_i(1), 1).result)
                         .result).result


def _narrow(value: ir.Value) -> ir.Value:
    return arith.TruncIOp(_i(32), to_i64(value)).result


def batched_gemm(lw, a: ArrayValue, b: ArrayValue, batch: ir.Value, m: ir.Value,
                 n: ir.Value, k: ir.Value, result_ty: types.Array) -> ArrayValue:
    """A new C-ordered (batch x m x n) array: product p is a[p] @ b[p], an
    operand of two dimensions (or a batch of one) serving every product.
    One strided-batched cuBLAS call on the GPU; a gemm per product on the CPU."""
    out = allocate(lw, result_ty, [batch, m, n])
    x, y = _Operand(lw, a), _Operand(lw, b)
    dtype = result_ty.dtype
    alpha, beta = _scalars(lw, dtype)
    ldc = arith.MaxUIOp(n, const_index(1)).result
    c = to_i64(element_address(out.memref))
    c_stride = to_i64(arith.MulIOp(m, n).result)
    if lw.target.gpu:
        status = _cublas_batched_call(lw, _KIND[dtype], y.row_major, x.row_major, n, m, k,
                                      alpha, y, x, beta, c, ldc, c_stride, batch)
    else:
        status = _blas_batch_loop(lw, _KIND[dtype], x, y, n, m, k, alpha, beta, c, ldc,
                                  c_stride, batch, _itemsize(dtype))
    lw.errors.raise_if(lw, cmpi("ne", status, arith.ConstantOp(_i(32), 0).result),
                       failure_status(lw))
    return out


def _blas_batch_loop(lw, kind, x, y, n, m, k, alpha, beta, c, ldc, c_stride, batch,
                     itemsize) -> ir.Value:
    """numba_xxgemm once per product, each operand moved on by its batch
    stride; the first failure's status."""
    loop = scf.ForOp(const_index(0), batch, const_index(1), [arith.ConstantOp(_i(32), 0).result])
    with ir.InsertionPoint(loop.body):
        p = to_i64(loop.induction_variable)
        size = arith.ConstantOp(_i(64), itemsize).result

        def moved(address, stride):
            return arith.AddIOp(address, arith.MulIOp(arith.MulIOp(p, stride).result,
                                                      size).result).result
        status = _blas_call(lw, kind, y.row_major, x.row_major, n, m, k, alpha,
                            _Moved(y, moved(y.address, y.batch_stride)),
                            _Moved(x, moved(x.address, x.batch_stride)), beta,
                            moved(c, c_stride), ldc)
        previous = loop.inner_iter_args[0]
        failed = cmpi("ne", previous, arith.ConstantOp(_i(32), 0).result)
        scf.YieldOp([select(failed, previous, status)])
    return loop.results[0]


class _Moved:
    """An operand's matrix at another address (one product of a batch)."""

    def __init__(self, operand: _Operand, address: ir.Value):
        self.address, self.lead = address, operand.lead


def _cublas_batched_call(lw, kind, a_plain, b_plain, m, n, k, alpha, a, b, beta, c, ldc,
                         c_stride, batch) -> ir.Value:
    """cublas<kind>gemmStridedBatched (64-bit strides between the matrices)."""
    i64, i32 = _i(64), _i(32)
    symbol = declare_function(lw.mlower.module, CUBLAS_BATCHED_SYMBOLS[kind],
                              [i64, i32, i32, i32, i32, i32, i64, i64, i32, i64, i64, i32,
                               i64, i64, i64, i32, i64, i32], [i32])
    return func.CallOp([i32], symbol, [
        _cublas_handle(lw), _cublas_op(a_plain), _cublas_op(b_plain), _narrow(m), _narrow(n),
        _narrow(k), alpha, a.address, _narrow(a.lead), a.batch_stride, b.address,
        _narrow(b.lead), b.batch_stride, beta, c, _narrow(ldc), c_stride,
        _narrow(batch)]).result


# -- matrix-vector and vector-vector products on the CPU (Numba's gemv and dot) --

def _contiguous_vector(lw, vector: ArrayValue) -> ir.Value:
    """The address of a vector's first element, copied first unless its
    elements are adjacent (numba_xxgemv and numba_xxdot take no stride)."""
    meta = memref.ExtractStridedMetadataOp(vector.memref).results
    extent, stride = meta[2], meta[3]
    adjacent = arith.OrIOp(cmpi("eq", stride, const_index(1)),
                           cmpi("sle", extent, const_index(1))).result
    source = _as_is_or_copied(lw, vector, adjacent)
    offset = memref.ExtractStridedMetadataOp(source).results[1]
    return to_i64(element_address(source, offset, _itemsize(vector.type.dtype)))


def _scalars(lw, dtype: types.Type) -> tuple[ir.Value, ir.Value]:
    """Addresses of the constants 1 and 0 (BLAS's alpha and beta)."""
    with ir.InsertionPoint.at_block_begin(lw.scope.alloca_block):
        scalar = memref.AllocaOp(ir.MemRefType.get([2], element_type(dtype)), [], []).result
    memref.StoreOp(const(dtype, 1), scalar, [const_index(0)])
    memref.StoreOp(const(dtype, 0), scalar, [const_index(1)])
    return (to_i64(element_address(scalar)),
            to_i64(element_address(scalar, const_index(1), _itemsize(dtype))))


def gemv(lw, matrix: ArrayValue, vector: ArrayValue, rows: ir.Value, cols: ir.Value,
         result_ty: types.Array, vector_first: bool) -> ArrayValue:
    """A new vector: matrix (rows x cols) @ vector, or vector @ matrix when
    `vector_first`. The output starts at zero, so the products of an empty
    contraction (BLAS returns at once) are zeros as NumPy's."""
    out = allocate(lw, result_ty, [cols if vector_first else rows])
    fill(lw, out, const(result_ty.dtype, 0))
    a = _Operand(lw, matrix)
    x = _contiguous_vector(lw, vector)
    alpha, beta = _scalars(lw, result_ty.dtype)
    # Column-major, a row-major matrix is its transpose (cols x rows); A @ x
    # multiplies by it transposed, x @ A (= A^T x) as it is.
    transpose = a.row_major if not vector_first else arith.XOrIOp(
        a.row_major, arith.ConstantOp(_i(1), 1).result).result
    m = select(a.row_major, cols, rows)
    n = select(a.row_major, rows, cols)
    i64, i8 = _i(64), _i(8)
    symbol = declare_function(lw.mlower.module, GEMV_SYMBOL, [i8, i8] + [i64] * 8, [_i(32)])
    status = func.CallOp([_i(32)], symbol, [
        _char(_KIND[result_ty.dtype]), select(transpose, _char("t"), _char("n")),
        to_i64(m), to_i64(n), alpha, a.address, a.lead, x, beta,
        to_i64(element_address(out.memref))]).result
    _raise_if_failed(lw, status, "gemv")
    return out


def dot(lw, a: ArrayValue, b: ArrayValue, n: ir.Value, dtype: types.Type) -> ir.Value:
    """The vector product a . b of `n` elements (numba_xxdot, not conjugated)."""
    with ir.InsertionPoint.at_block_begin(lw.scope.alloca_block):
        result = memref.AllocaOp(ir.MemRefType.get([], element_type(dtype)), [], []).result
    i64, i8 = _i(64), _i(8)
    symbol = declare_function(lw.mlower.module, DOT_SYMBOL, [i8, i8] + [i64] * 4, [_i(32)])
    status = func.CallOp([_i(32)], symbol, [
        _char(_KIND[dtype]), arith.ConstantOp(i8, 0).result, to_i64(n),
        _contiguous_vector(lw, a), _contiguous_vector(lw, b),
        to_i64(element_address(result))]).result
    _raise_if_failed(lw, status, "dot")
    return memref.LoadOp(result, []).result
