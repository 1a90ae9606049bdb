"""The CPU target: parallel loops for MLIR's async runtime (compiler/passes.py
splits them into tasks for its thread pool), reductions in chunks whose
partials the host folds in order."""
from __future__ import annotations

from .._mlir import ir, scf
from ..lowering.build import const_index
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import chunked_partials, delinearize, fold_in_order, product
from ..lowering.values import ArrayValue
from ..parallel.array_reductions import CHUNKS, chunked_loop
from ..runtime.device_arrays import DeviceArrayType

# CPU reductions: chunks folded by the async runtime's workers.
CPU_REDUCTION_CHUNKS = 64


class CPUStrategy:
    gpu = False
    # do several threads share each iteration of a prange body (its inner
    # loops spread over them)? Here one worker runs it, as Numba does.
    cooperative_bodies = False

    def bind_array_argument(self, lw, value, ty, origin, in_tuple=None):
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

    def privatizes_updates(self, arrays: list):
        """Whether private copies of the arrays a loop adds into atomically
        fit (an i1 value), or None: this target updates them in place."""
        return None

    def library_gemm(self) -> bool:
        """Do matrix products in host code call a BLAS library (lowering/blas.py)?"""
        return True

    def can_allocate(self, lw) -> bool:
        return True

    def check_allocation(self, lw, loc) -> None:
        pass

    def allocated(self, lw, buffer, extents: list) -> None:
        """`buffer` was just allocated (the GPU checks its device heap's)."""

    def parallel_loop(self, lw, trips, body, reductions) -> list:
        """One N-d `scf.parallel`; with reductions, contiguous chunks per
        worker whose partials the host folds in order (deterministic, and
        parallel: the async runtime does not split loops with scf.reduce)."""
        if reductions:
            total = product(trips)
            partials = chunked_partials(total, CPU_REDUCTION_CHUNKS, reductions,
                                         lambda k, accs: body(delinearize(k, trips), accs))
            return fold_in_order(partials, const_index(CPU_REDUCTION_CHUNKS), reductions)
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

    def array_reduction_chunks(self, total, sizes: list, itemsizes: list) -> ir.Value:
        """How many private copies an array reduction (parallel/array_reductions.py) uses."""
        return const_index(CHUNKS)

    def chunked_loop(self, lw, total, chunks, sizes: list, inner_trips: list,
                     chunk) -> ir.Value:
        """The chunks of an array reduction (array_reductions.Chunk); returns
        the number run. `inner_trips` are for targets whose threads share an
        iteration: here each chunk runs on one worker."""
        chunked_loop(lw, total, chunks, chunk)
        return chunks
