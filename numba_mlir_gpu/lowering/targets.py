"""The target-specific parts of the lowering: parallel loops, reductions and
(on the GPU) where arrays live.

GPU memory model: each array the function allocates is device memory when
only kernels touch it, else CUDA managed memory (runtime/placement.py
decides after the pipeline). NumPy arguments get contiguous mirrors, filled
at entry and copied back at exit when the function writes them; arrays that
already live on the GPU are used in place.
"""
from __future__ import annotations

from .._mlir import arith, ir, memref, scf
from ..memory import DeviceArrayType
from .argument_writes import overwritten_arguments, written_arguments
from .build import const_index
from .errors import UnsupportedConstructError
from .gpureduce import tree_reduce
from .loops import (chunked_partials, copy_elements, delinearize, flat_parallel, fold_in_order,
                    product)
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

    def can_allocate(self, lw) -> bool:
        return True

    def check_allocation(self, lw, loc) -> None:
        pass

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
        """How many private copies an array reduction (array_reductions.py) uses."""
        from .array_reductions import CHUNKS
        return const_index(CHUNKS)

    def chunked_loop(self, lw, total, chunks, sizes: list, chunk) -> ir.Value:
        """The chunks of an array reduction (array_reductions.Chunk); returns
        the number run."""
        from .array_reductions import chunked_loop
        chunked_loop(lw, total, chunks, chunk)
        return chunks


# CPU reductions: chunks folded by the async runtime's workers.
CPU_REDUCTION_CHUNKS = 64

class GPUStrategy(CPUStrategy):
    gpu = True

    def __init__(self):
        self.mirrors: list[tuple] = []   # (mirror, host memref, extents, contiguous)
        self.written: set[int] = set()
        self.overwritten: dict[int, list] = {}

    def prologue(self, lw) -> None:
        self.written = written_arguments(lw.func_ir)
        self.overwritten = overwritten_arguments(lw.func_ir)

    def bind_array_argument(self, lw, value, ty, origin):
        if isinstance(ty, DeviceArrayType):
            return ArrayValue(value, ty, origin)      # used in place
        extents = [memref.DimOp(value, const_index(a)).result for a in range(ty.ndim)]
        contiguous = ty.layout == "C"
        mirror_type = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * ty.ndim,
                                        ir.MemRefType(value.type).element_type)
        mirror = memref.AllocOp(mirror_type, extents, []).result
        if origin in self.overwritten:
            # copied in only when the loop that writes it could miss elements
            branch = scf.IfOp(_may_miss(lw, self.overwritten[origin], extents))
            with ir.InsertionPoint(branch.then_block):
                _copy(value, mirror, extents, contiguous)
                scf.YieldOp([])
        else:
            _copy(value, mirror, extents, contiguous)
        if origin in self.written:
            self.mirrors.append((mirror, value, extents, contiguous))
        return ArrayValue(mirror, ty if contiguous else ty.copy(layout="C"), origin)

    def epilogue(self, lw) -> None:
        for mirror, host, extents, contiguous in self.mirrors:
            _copy(mirror, host, extents, contiguous)

    def check_element_access(self, lw, array: ArrayValue, loc) -> None:
        if lw.parallel_depth == 0 and isinstance(array.type, DeviceArrayType):
            raise UnsupportedConstructError(
                "reading or writing elements of a GPU array outside a prange loop "
                "(host code cannot dereference device memory)", loc)

    def can_allocate(self, lw) -> bool:
        # in a chunk kernel of an array reduction, temporaries become scratch
        return lw.parallel_depth == 0 or lw.cooperation is not None

    def check_allocation(self, lw, loc) -> None:
        if not self.can_allocate(lw):
            raise UnsupportedConstructError("allocating arrays inside a GPU kernel", loc)

    def parallel_loop(self, lw, trips, body, reductions) -> list:
        total = product(trips)
        if not reductions:
            flat_parallel(total, lambda k: body(delinearize(k, trips), []))
            return []
        return tree_reduce(lw.mlower.module, total, reductions,
                           lambda k, accs: body(delinearize(k, trips), accs))


    def array_reduction_chunks(self, total, sizes: list, itemsizes: list) -> ir.Value:
        from .gpuarrayreduce import chunk_count
        copy_bytes = const_index(0)
        for size, itemsize in zip(sizes, itemsizes):
            copy_bytes = arith.AddIOp(copy_bytes,
                                      arith.MulIOp(size, const_index(itemsize)).result).result
        return chunk_count(total, copy_bytes)

    def chunked_loop(self, lw, total, chunks, sizes: list, chunk) -> ir.Value:
        """One block per chunk, its threads sharing each iteration; returns
        the number of chunks run (fewer where temporaries need too much
        scratch memory)."""
        from .gpuarrayreduce import block_threads, launch_chunks
        largest = const_index(1)        # no accumulators (a body that makes arrays): one warp
        for size in sizes:
            largest = arith.MaxUIOp(largest, size).result
        return launch_chunks(lw, total, chunks, block_threads(largest), chunk)


def _may_miss(lw, stops: list, extents) -> ir.Value:
    """Could a loop running to `stops` (per dimension) miss an element?"""
    missed = None
    for stop, extent in zip(stops, extents):
        kind, *where = stop
        if kind == "const":
            bound = const_index(where[0])
        elif kind == "dim":
            bound = memref.DimOp(lw.arguments[where[0]][0], const_index(where[1])).result
        else:
            bound = arith.IndexCastOp(ir.IndexType.get(), lw.arguments[where[0]][0]).result
        short = arith.CmpIOp(arith.CmpIPredicate.slt, bound, extent).result
        missed = short if missed is None else arith.OrIOp(missed, short).result
    return missed


def _copy(src, dst, extents, contiguous: bool) -> None:
    """Between a NumPy argument and its mirror. Contiguous: one memref.copy,
    which becomes one cuMemcpy (runtime/placement.py). Strided (Fortran
    order, slices): an element loop on the host into a contiguous mirror."""
    if contiguous:
        memref.CopyOp(src, dst)
        return
    copy_elements(src, dst, extents)
