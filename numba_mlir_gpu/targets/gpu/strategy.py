"""The GPU target: parallel loops, reductions and where arrays live.

GPU memory model: each array the function allocates is device memory when
only kernels touch it, else CUDA managed memory (runtime/placement.py
decides after the pipeline). NumPy arguments get contiguous mirrors, filled
at entry and copied back at exit when the function writes them; arrays that
already live on the GPU are used in place.
"""
from __future__ import annotations

from ..._mlir import arith, ir, memref, scf
from ...lowering.argument_writes import overwritten_arguments, written_arguments
from ...lowering.build import const_index
from ...lowering.errors import UnsupportedConstructError
from ...lowering.loops import copy_elements, delinearize, flat_parallel, product
from ...lowering.values import ArrayValue
from ...runtime import cublas
from ...runtime.device_arrays import DeviceArrayType
from ..cpu import CPUStrategy
from . import heap, privatize, schedules
from .chunks import MAX_THREADS, WARP, block_threads, chunk_count, launch_chunks, most_threads
from .reduce import tree_reduce


class GPUStrategy(CPUStrategy):
    gpu = True
    cooperative_bodies = True   # a prange body with inner loops: a block per iteration

    def __init__(self):
        self.mirrors: list[tuple] = []   # (mirror, host memref, extents, contiguous)
        self.written: set[int] = set()
        self.overwritten: dict[int, list] = {}

    def prologue(self, lw) -> None:
        self.written = written_arguments(lw.func_ir)
        self.overwritten = overwritten_arguments(lw.func_ir)

    def bind_array_argument(self, lw, value, ty, origin, in_tuple=None):
        """`in_tuple`: the tuple argument holding this array, if any: written
        when the function writes any of the tuple's arrays (a namedtuple's
        `a.y[:] = 5`), so copied back too; its copy in is always made."""
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
        if origin in self.written or (in_tuple is not None and in_tuple in self.written):
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

    def library_gemm(self) -> bool:
        """cuBLAS where the library is found ($NUMBA_MLIR_GPU_CUBLAS=0: our kernels)."""
        return cublas.enabled()

    def can_allocate(self, lw) -> bool:
        # in a chunk kernel of an array reduction, temporaries become scratch
        return lw.parallel_depth == 0 or lw.cooperation is not None

    def check_allocation(self, lw, loc) -> None:
        # elsewhere in a kernel: the device heap, where the loop allows it
        if not (self.can_allocate(lw) or lw.device_heap):
            raise UnsupportedConstructError("allocating arrays inside a GPU kernel", loc)

    def allocated(self, lw, buffer: ir.Value, extents: list) -> None:
        """`buffer` was just allocated: inside a kernel, outside the scratch
        of a chunk kernel, it comes from the device heap (`malloc`, freed
        in the same iteration by buffer deallocation); a NULL result for a
        non-empty array stores MemoryError in the loop's status and ends the
        thread (heap.py)."""
        if lw.parallel_depth > 0 and lw.cooperation is None:
            heap.check_allocation(lw, buffer, extents)

    def parallel_loop(self, lw, trips, body, reductions) -> list:
        total = product(trips)
        if not reductions:
            flat_parallel(total, lambda k: body(delinearize(k, trips), []))
            return []
        return tree_reduce(lw.mlower.module, total, reductions,
                           lambda k, accs: body(delinearize(k, trips), accs))

    def privatizes_updates(self, arrays: list) -> ir.Value:
        """Do private copies of `arrays`, the targets of a loop's atomic
        additions, fit a block's shared memory (privatize.py)?"""
        return privatize.fits(arrays)

    def privatized_loop(self, lw, trips: list, arrays: list, kinds: list, body) -> None:
        """`body(indices, copies)` over the box `trips`, its atomic
        additions into `arrays` going to `copies`, a block's own."""
        privatize.privatized_loop(lw, product(trips), arrays, kinds,
                                  lambda k, copies: body(delinearize(k, trips), copies))

    def spreads_inner_loops(self, iterations: ir.Value, inner_trips: list) -> ir.Value:
        """Does a block share each of the `iterations` of a prange body whose
        nested loops run `inner_trips` times (None: not known before the
        loop)? When the iterations alone are too few to fill the GPU
        (BODY_FLAT_ITERATIONS) and an inner loop is at least a warp long (or
        of unknown length); else one thread runs each iteration: a warp
        would mostly idle, or the threads have work enough (a matrix
        product's outputs) and combining across a block only costs."""
        few = arith.CmpIOp(arith.CmpIPredicate.ult, iterations,
                           const_index(schedules.BODY_FLAT_ITERATIONS)).result
        if any(t is None for t in inner_trips):
            return few
        longest = const_index(0)
        for trips in inner_trips:
            longest = arith.MaxUIOp(longest, trips).result
        long_enough = arith.CmpIOp(arith.CmpIPredicate.uge, longest, const_index(WARP)).result
        return arith.AndIOp(few, long_enough).result

    def array_reduction_chunks(self, total, sizes: list, itemsizes: list) -> ir.Value:
        copy_bytes = const_index(0)
        for size, itemsize in zip(sizes, itemsizes):
            copy_bytes = arith.AddIOp(copy_bytes,
                                      arith.MulIOp(size, const_index(itemsize)).result).result
        return chunk_count(total, copy_bytes)

    def chunked_loop(self, lw, total, chunks, sizes: list, inner_trips: list,
                     chunk) -> ir.Value:
        """One block per chunk, its threads sharing each iteration; returns
        the number of chunks run (fewer where temporaries need too much
        scratch memory). Threads: one per element of the largest
        accumulator, and one per BODY_ITEMS_PER_THREAD iterations of the
        longest inner loop (all a block holds when the host cannot tell an
        inner loop's length), rounded up to 1, 2, 4, ... warps, from one warp
        to BODY_MAX_THREADS, or more when the chunks are too few to fill the
        GPU (chunks.most_threads)."""
        largest = const_index(1)        # no accumulators and no inner loops: one warp
        per_thread = const_index(schedules.BODY_ITEMS_PER_THREAD)
        for size in sizes + [arith.CeilDivUIOp(t, per_thread).result if t is not None
                             else const_index(MAX_THREADS) for t in inner_trips]:
            largest = arith.MaxUIOp(largest, size).result
        threads = block_threads(largest, most_threads(chunks), whole_powers=True)
        return launch_chunks(lw, total, chunks, threads, chunk)


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
