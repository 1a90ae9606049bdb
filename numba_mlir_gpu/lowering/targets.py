"""The target-specific parts of the lowering: parallel loops, reductions and
(on the GPU) where arrays live.

GPU memory model: every array the function allocates is CUDA managed memory
(see passes.py), so host code and kernels can both touch it. NumPy arguments
are copied into managed mirrors at entry and copied back at exit when the
function writes them; arrays that already live on the GPU are used in place.
"""
from __future__ import annotations

from numba.core import ir as nir
from numba.parfors.parfor import Parfor

from .._mlir import arith, ir, memref, scf
from ..memory import DeviceArrayType
from .build import const_index
from .errors import UnsupportedConstructError
from .loops import delinearize, flat_parallel, product
from .values import ArrayValue


class CPUStrategy:
    gpu = False

    def bind_array_argument(self, lw, value, ty, origin):
        if isinstance(ty, DeviceArrayType):
            raise UnsupportedConstructError(
                f"GPU arrays ({ty}) on the CPU target (use the 'gpu' target, or copy the "
                "array to the host)", lw.loc)
        return ArrayValue(value, ty, origin)

    def prologue(self, lw) -> None:
        pass

    def epilogue(self, lw) -> None:
        pass

    def check_element_access(self, lw, array: ArrayValue, loc) -> None:
        pass

    def check_allocation(self, lw, loc) -> None:
        pass

    def parallel_loop(self, lw, trips, body, reductions) -> list:
        """One N-d `scf.parallel`; with reductions, contiguous chunks per
        worker whose partials the host folds in order (deterministic, and
        parallel: the async runtime does not split loops with scf.reduce)."""
        if reductions:
            total = product(trips)
            partials = _chunked_partials(total, CPU_REDUCTION_CHUNKS, reductions,
                                         lambda k, accs: body(delinearize(k, trips), accs))
            return _fold_on_host(partials, CPU_REDUCTION_CHUNKS, reductions)
        n = len(trips)
        loop = scf.ParallelOp([r.mlir_type for r in reductions], [const_index(0)] * n, trips,
                              [const_index(1)] * n, [r.identity_value() for r in reductions])
        block = loop.regions[0].blocks.append(*([ir.IndexType.get()] * n))
        with ir.InsertionPoint(block):
            values = body(list(block.arguments), [r.identity_value() for r in reductions])
            reduce = scf.ReduceOp(values, len(reductions))
            for red, region in zip(reductions, reduce.regions):
                combine = region.blocks.append(red.mlir_type, red.mlir_type)
                with ir.InsertionPoint(combine):
                    scf.ReduceReturnOp(red.combine(*combine.arguments))
        return list(loop.results)


# CPU reductions: chunks folded by the async runtime's workers.
CPU_REDUCTION_CHUNKS = 64

# Workers of the first GPU reduction stage; each strides over the iteration space
# (coalesced), then a second stage folds their partials in a fixed order, so
# results are identical from run to run.
REDUCTION_WORKERS = 65536
REDUCTION_WORKERS_2 = 256


class GPUStrategy(CPUStrategy):
    gpu = True

    def __init__(self):
        self.mirrors: list[tuple[ir.Value, ir.Value]] = []   # (mirror, host memref)
        self.written: set[int] = set()

    def prologue(self, lw) -> None:
        self.written = written_arguments(lw.func_ir)

    def bind_array_argument(self, lw, value, ty, origin):
        if isinstance(ty, DeviceArrayType):
            return ArrayValue(value, ty, origin)      # used in place
        if ty.layout != "C":
            raise UnsupportedConstructError(
                f"non-contiguous NumPy arrays ({ty}) on the GPU target", lw.loc)
        mirror = memref.AllocOp(value.type, [memref.DimOp(value, const_index(a)).result
                                             for a in range(ty.ndim)], []).result
        memref.CopyOp(value, mirror)
        if origin in self.written:
            self.mirrors.append((mirror, value))
        return ArrayValue(mirror, ty, origin)

    def epilogue(self, lw) -> None:
        for mirror, host in self.mirrors:
            memref.CopyOp(mirror, host)

    def check_element_access(self, lw, array: ArrayValue, loc) -> None:
        if lw.parallel_depth == 0 and isinstance(array.type, DeviceArrayType):
            raise UnsupportedConstructError(
                "reading or writing elements of a GPU array outside a prange loop "
                "(host code cannot dereference device memory)", loc)

    def check_allocation(self, lw, loc) -> None:
        if lw.parallel_depth > 0:
            raise UnsupportedConstructError("allocating arrays inside a GPU kernel", loc)

    def parallel_loop(self, lw, trips, body, reductions) -> list:
        total = product(trips)
        if not reductions:
            flat_parallel(total, lambda k: body(delinearize(k, trips), []))
            return []
        partials = _strided_partials(total, REDUCTION_WORKERS, reductions,
                                     lambda k, accs: body(delinearize(k, trips), accs))
        loads = [(lambda j, p=p: memref.LoadOp(p, [j]).result) for p in partials]

        def fold(k, accs):
            return [red.combine(acc, load(k)) for red, acc, load in zip(reductions, accs, loads)]
        partials = _strided_partials(const_index(REDUCTION_WORKERS), REDUCTION_WORKERS_2,
                                     reductions, fold)
        return _fold_on_host(partials, REDUCTION_WORKERS_2, reductions)


def _fold_on_host(partials, count: int, reductions) -> list:
    """The last few partial values, folded in order on the host."""
    loop = scf.ForOp(const_index(0), const_index(count), const_index(1),
                     [r.identity_value() for r in reductions])
    with ir.InsertionPoint(loop.body):
        j = loop.induction_variable
        scf.YieldOp([red.combine(acc, memref.LoadOp(p, [j]).result) for red, acc, p
                     in zip(reductions, loop.inner_iter_args, partials)])
    return list(loop.results)


def _worker_partials(workers: int, reductions, span, step) -> list:
    """Worker t folds the iterations `range(*span(t))` with `step(k, accs)`
    into partial[t]; returns the partial buffers."""
    partials = [memref.AllocOp(ir.MemRefType.get([workers], r.mlir_type), [], []).result
                for r in reductions]

    def worker(t):
        loop = scf.ForOp(*span(t), [r.identity_value() for r in reductions])
        with ir.InsertionPoint(loop.body):
            scf.YieldOp(step(loop.induction_variable, list(loop.inner_iter_args)))
        for p, value in zip(partials, loop.results):
            memref.StoreOp(value, p, [t])
    flat_parallel(const_index(workers), worker)
    return partials


def _chunked_partials(total, chunks: int, reductions, step) -> list:
    """Contiguous chunks per worker (CPU caches)."""
    size = arith.CeilDivUIOp(total, const_index(chunks)).result

    def span(t):
        lo = arith.MinUIOp(arith.MulIOp(t, size).result, total).result
        return lo, arith.MinUIOp(arith.AddIOp(lo, size).result, total).result, const_index(1)
    return _worker_partials(chunks, reductions, span, step)


def _strided_partials(total, workers: int, reductions, step) -> list:
    """Iterations t, t+workers, ... per worker (coalesced on the GPU)."""
    return _worker_partials(workers, reductions,
                            lambda t: (t, total, const_index(workers)), step)


def written_arguments(func_ir) -> set[int]:
    """Indices of the arguments whose elements the function may write."""
    arg_of, alias_of, targets = {}, {}, set()

    def walk(blocks):
        for block in blocks:
            for stmt in block.body:
                if isinstance(stmt, Parfor):
                    walk([stmt.init_block, *stmt.loop_body.values()])
                elif isinstance(stmt, nir.Assign):
                    value = stmt.value
                    if isinstance(value, nir.Arg):
                        arg_of[stmt.target.name] = value.index
                    elif isinstance(value, nir.Var):
                        alias_of[stmt.target.name] = value.name
                    elif isinstance(value, nir.Expr):
                        _note_expr(stmt.target.name, value, alias_of, targets)
                elif isinstance(stmt, (nir.SetItem, nir.StaticSetItem)):
                    targets.add(stmt.target.name)
    walk(func_ir.blocks.values())
    written = set()
    for name in targets:
        seen = set()
        while name in alias_of and name not in seen:
            seen.add(name)
            name = alias_of[name]
        if name in arg_of:
            written.add(arg_of[name])
    return written



def _note_expr(target: str, expr, alias_of: dict, targets: set) -> None:
    """Views alias what they index (`a[i]`, `a[1:3]`, `a.T`, `a.reshape()`);
    in-place operators write their left operand; a call may write any array
    it is given (jitted callees, ufunc outputs)."""
    if expr.op in ("getitem", "static_getitem", "getattr"):
        alias_of[target] = expr.value.name
    elif expr.op == "inplace_binop":
        targets.add(expr.lhs.name)
        alias_of[target] = expr.lhs.name
    elif expr.op == "call":
        targets.update(arg.name for arg in expr.args)
        if expr.func.name in alias_of:          # a method of an array (a.reshape(...))
            targets.add(expr.func.name)
            alias_of[target] = expr.func.name
        elif expr.args:
            alias_of[target] = expr.args[0].name
