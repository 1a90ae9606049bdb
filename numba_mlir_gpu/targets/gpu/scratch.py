"""Temporary arrays of a chunked GPU loop body as per-chunk scratch buffers.

A chunk kernel's arrays are not allocated in it. When the body of a chunk kernel (chunks.py)
makes a temporary array (`acc += w * x[i]`, `d = A[i, :] - C[j, :]`), the
`memref.alloc` is emitted as on the CPU and recorded; once the kernel is
built, each one is replaced by a slot of a buffer allocated before the launch
(`memref.view` at a byte offset, the same identity-layout type):

* made by the block's threads together (its scalar code): one slot per block;
* made inside an element loop the threads share, or by one thread: one slot
  per thread of each block.

That needs its sizes before the launch: `HoistedSizes` recomputes them there
from the values they derive from (captured values, shapes of arrays and
views, constants, integer arithmetic, the body's scalar variables assigned
once; a divisor that may be zero is replaced by 1 there, as that division
would have faulted). An allocation run more than once per iteration (in a
loop inside the body) reuses its slot: each run's array is dead when the
next starts, since an array of a loop body is never carried to a later
iteration (`_leaves_its_run` checks). A size that depends on the data takes
an upper bound where one is known (a mask's length, a slice's source); one
computed from the iteration number takes its largest value over the loop (a
max reduction kernel launched first); any other raises NeedsDeviceHeap (the
loop then runs on the device heap, heap.py, or, with array reductions, that
is the error, naming its source line). The scratch of one loop is kept under SCRATCH_BYTES, all chunks
together, by running fewer chunks.
"""
from __future__ import annotations

from dataclasses import dataclass

from numba.core import types

from ..._mlir import arith, ir, memref
from ...lowering.build import cmpi, const_index, select
from ...lowering.errors import NeedsDeviceHeap, UnsupportedConstructError
from ...parallel.reduction import Reduction
from .reduce import tree_reduce

_LOOPS = {"scf.for", "scf.while", "scf.parallel"}
_DIVISIONS = {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi",
              "arith.ceildivui", "arith.floordivsi"}
# Ops through which an array reaches another iteration or the code after it.
_HANDING_ON = {"cf.br", "cf.cond_br", "scf.yield", "scf.condition", "func.return"}

# Scratch memory of one chunk kernel, all chunks together.
SCRATCH_BYTES = 512 << 20


@dataclass
class Temporary:
    """A `memref.alloc` of a chunk kernel's body (Numba loc for errors);
    `per_thread`: made by one thread, not by the block's threads together."""
    value: ir.Value
    loc: object
    per_thread: bool
    bounds: list | None = None      # upper bounds of its dynamic sizes (arrays.allocate)


@dataclass
class KernelIndices:
    """Values of the chunk kernel: inside it, its block and thread and the
    threads per block; before it, the threads per block and the iteration
    count; the module (for the kernels made before it)."""
    block: ir.Value
    thread: ir.Value
    threads: ir.Value
    threads_before: ir.Value
    total: ir.Value
    module: ir.Module


def hoist_temporaries(launch: ir.Operation, chunk_loop: ir.Operation, at: KernelIndices,
                      chunks: ir.Value, temporaries: list[Temporary]) -> ir.Value:
    """Replace each temporary inside `launch` by its slot of a buffer
    allocated before it. Returns the number of chunks to run (`chunks`, or
    fewer where the scratch would exceed SCRATCH_BYTES); the caller launches
    that many blocks."""
    if not temporaries:
        return chunks
    iteration = chunk_loop.regions[0].blocks[0].arguments[0]
    sizes = HoistedSizes(launch, Iterations(iteration, at.total, at.module))
    slots = []
    with ir.InsertionPoint(launch), launch.location:
        per_chunk = const_index(0)
        for temp in temporaries:
            alloc = _op(temp.value)
            if _in_loop(alloc, chunk_loop) and not _leaves_its_run(temp.value):
                raise NeedsDeviceHeap(
                    "a temporary array made in a loop inside the body of a GPU prange loop "
                    "run in chunks and carried to its next iteration", temp.loc)
            count = _slot_bytes(sizes, temp)
            copies = at.threads_before if temp.per_thread else const_index(1)
            per_chunk = arith.AddIOp(per_chunk, arith.MulIOp(count, copies).result).result
            slots.append((count, copies))
        budget = arith.DivUIOp(const_index(SCRATCH_BYTES),
                               arith.MaxUIOp(per_chunk, const_index(1)).result).result
        chunks = arith.MaxUIOp(arith.MinUIOp(chunks, budget).result, const_index(1)).result
        i8 = ir.IntegerType.get_signless(8)
        buffers = [memref.AllocOp(ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], i8),
                                  [arith.MulIOp(arith.MulIOp(count, copies).result,
                                                chunks).result], []).result
                   for count, copies in slots]
    for temp, (count, _), buffer in zip(temporaries, slots, buffers):
        alloc = _op(temp.value)
        with ir.InsertionPoint(alloc), alloc.location:
            slot = at.block
            if temp.per_thread:
                slot = arith.AddIOp(arith.MulIOp(at.block, at.threads).result, at.thread).result
            shift = arith.MulIOp(slot, count).result
            view = memref.ViewOp(ir.MemRefType(temp.value.type), buffer, shift,
                                 list(alloc.opview.dynamicSizes)).result
        temp.value.replace_all_uses_with(view)
        alloc.erase()
    return chunks


def _slot_bytes(sizes: "HoistedSizes", temp: Temporary) -> ir.Value:
    """Bytes of one slot for `temp`, computed before the kernel: from its
    sizes; where they depend on the data, from their upper bounds; where
    they depend on the iteration, from their largest value over the loop."""
    loc, ty = temp.loc, ir.MemRefType(temp.value.type)
    dynamic = list(_op(temp.value).opview.dynamicSizes)
    bounds = temp.bounds or [None] * len(dynamic)
    outer = []
    for value, bound in zip(dynamic, bounds):
        if bound is not None:
            outer.append(sizes.upper(sizes.hoist(bound)))
            continue
        exact = sizes.hoist(value)
        outer.append(exact if exact is not None else sizes.largest(value, loc))
    if any(v is None for v in outer):
        raise NeedsDeviceHeap(_UNSIZED, loc)
    if any(v in sizes.inexact for v in outer):
        sizes.bounded[temp.value] = outer
    count, sized = const_index(_element_bytes(ty.element_type, loc)), iter(outer)
    for extent in ty.shape:
        # in a branch not taken, a size may be negative: no slot then
        extent = arith.MaxSIOp(next(sized), const_index(0)).result \
            if extent == ir.ShapedType.get_dynamic_size() else const_index(extent)
        count = arith.MulIOp(count, extent).result
    return count


def _leaves_its_run(value: ir.Value) -> bool:
    """Is the array `value` (and every view of it) unreachable once its
    allocation runs again? True unless it is handed to a block argument or
    a region's results, the only ways an SSA value outlives the next
    run of its definition (arrays are never stored in memory here)."""
    work, seen = [value], set()
    while work:
        current = work.pop()
        for use in current.uses:
            op = use.owner.operation
            if op.name in _HANDING_ON:
                return False
            for result in op.results:
                if isinstance(result.type, ir.MemRefType) and result not in seen:
                    seen.add(result)
                    work.append(result)
    return True


_UNSIZED = ("a temporary array whose size depends on the data or on variables of the body "
            "other than the iteration, in the body of a GPU prange loop with array reductions "
            "(run in chunks: temporaries need sizes known before the kernel)")


@dataclass
class Iterations:
    """The chunk loop's iteration number (inside the kernel), the iteration
    count and the module, for `HoistedSizes.largest`."""
    variable: ir.Value
    total: ir.Value
    module: ir.Module


class HoistedSizes:
    """Values of a kernel body recomputed outside the kernel (at the current
    insertion point), or None. `free` maps block arguments of the kernel
    (the iteration number) to values given for them.

    The extents of a temporary whose sizes depend on the data or the
    iteration are known only as upper bounds (`bounded`); values computed
    from them stay upper bounds (`inexact`) through operations that never
    decrease as an operand grows, and are None through any other."""

    def __init__(self, launch: ir.Operation, iterations: Iterations | None = None,
                 free: dict | None = None):
        self.launch = launch
        self.iterations = iterations
        self.free = free or {}
        self.done: dict = {}
        self.bounded: dict = {}       # temporary -> its hoisted extents (some bounds)
        self.inexact: set = set()

    def hoist(self, value: ir.Value):
        if not self._inside(value):
            return value
        if value not in self.done:
            self.done[value] = self._hoist(value)
        return self.done[value]

    def upper(self, value):
        """`value` (or None), known as an upper bound only."""
        if value is not None:
            self.inexact.add(value)
        return value

    def largest(self, value: ir.Value, loc) -> ir.Value:
        """The largest value (at least 0) that `value`, an index computed from
        the iteration number and values known before the kernel, takes over
        the chunk loop: a GPU max reduction run before the launch. Anything
        else of the body in it (the data, inner loop variables) is refused."""
        if self.iterations is None:
            raise NeedsDeviceHeap(_UNSIZED, loc)
        loop = self.iterations
        largest = Reduction("size", types.int64, max, 0)
        i64 = ir.IntegerType.get_signless(64)

        def step(k, accs):
            inner = HoistedSizes(self.launch, free={loop.variable: k})
            size = inner.hoist(value)       # (the largest of upper bounds is one too)
            if size is None:
                raise NeedsDeviceHeap(_UNSIZED, loc)
            return [largest.combine(accs[0], arith.IndexCastOp(i64, size).result)]
        (most,) = tree_reduce(loop.module, loop.total, [largest], step)
        return self.upper(arith.IndexCastOp(ir.IndexType.get(), most).result)

    def _hoist(self, value: ir.Value):
        if isinstance(value.owner, ir.Block):
            return self.free.get(value)     # a loop variable or a kernel index: None
        op = _op(value)
        name = op.name
        if name == "memref.dim":
            axis = _constant(op.operands[1])
            return None if axis is None else self.extent(op.operands[0], axis)
        if name == "memref.extract_strided_metadata":
            number = _result_number(op, value)
            rank = ir.MemRefType(op.operands[0].type).rank
            if 2 <= number < 2 + rank:
                return self.extent(op.operands[0], number - 2)
            return None
        if name == "memref.load" and len(op.operands) == 1:
            stored = _only_store(op.operands[0])
            return None if stored is None else self.hoist(stored)
        if name.startswith("arith.") and len(op.regions) == 0 and len(op.results) == 1:
            operands = [self.hoist(v) for v in op.operands]
            if any(v is None for v in operands):
                return None
            bound = any(v in self.inexact for v in operands)
            if bound and not _monotone(name, operands):
                return None
            if name in _DIVISIONS and not _constant(operands[1]):
                operands[1] = _nonzero(operands[1])
            new = op.clone()
            for i, v in enumerate(operands):
                new.operands[i] = v
            if bound:
                self.inexact.add(new.results[0])
            return new.results[0]
        return None

    def extent(self, array: ir.Value, axis: int):
        """Extent `axis` of a memref, before the kernel."""
        if not self._inside(array):
            return memref.DimOp(array, const_index(axis)).result
        shape = ir.MemRefType(array.type).shape
        if shape[axis] != ir.ShapedType.get_dynamic_size():
            return const_index(shape[axis])
        if isinstance(array.owner, ir.Block):
            return None
        op = _op(array)
        if op.name == "memref.cast":
            return self.extent(op.operands[0], axis)
        if array in self.bounded:
            return self.bounded[array][_dynamic_before(shape, axis)]
        if op.name in ("memref.alloc", "memref.view"):
            sizes = list(op.opview.dynamicSizes if op.name == "memref.alloc" else op.opview.sizes)
            return self.hoist(sizes[_dynamic_before(shape, axis)])
        if op.name in ("memref.subview", "memref.reinterpret_cast"):
            static = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
            kept = list(range(len(static)))
            if len(static) > len(shape):          # rank-reducing: unit sizes dropped
                kept = [i for i, s in enumerate(static) if s != 1]
                if len(kept) != len(shape):
                    return None
            where = kept[axis]
            dynamic = ir.ShapedType.get_dynamic_size()
            position = sum(1 for s in static[:where] if s == dynamic)
            exact = self.hoist(list(op.opview.sizes)[position])
            if exact is not None or op.name != "memref.subview":
                return exact
            # a slice that depends on the iteration (x[:i]): at most its source
            return self.upper(self.extent(op.operands[0], where))
        return None

    def _inside(self, value: ir.Value) -> bool:
        owner = value.owner
        op = owner.owner if isinstance(owner, ir.Block) else owner
        op = op.operation
        while op is not None:
            if op == self.launch:
                return True
            op = op.parent.operation if op.parent is not None else None
        return False


# Operations whose result never decreases when an operand grows.
_MONOTONE = {"arith.addi", "arith.maxsi", "arith.maxui", "arith.minsi", "arith.minui",
             "arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui"}


def _monotone(name: str, operands: list) -> bool:
    if name == "arith.muli":         # by a non-negative constant
        return any((_constant(v) is not None and _constant(v) >= 0) for v in operands)
    return name in _MONOTONE


def _op(value: ir.Value) -> ir.Operation:
    return value.owner.operation


def _constant(value: ir.Value):
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return None
    return ir.IntegerAttr(owner.operation.attributes["value"]).value


def _nonzero(divisor: ir.Value) -> ir.Value:
    """A divisor made safe to divide by on the host: a zero one would have
    faulted in the body, where the division may not even run."""
    zero = arith.ConstantOp(divisor.type, ir.IntegerAttr.get(divisor.type, 0)).result
    one = arith.ConstantOp(divisor.type, ir.IntegerAttr.get(divisor.type, 1)).result
    return select(cmpi("eq", divisor, zero), one, divisor)


def _result_number(op: ir.Operation, value: ir.Value) -> int:
    return list(op.results).index(value)


def _dynamic_before(shape: list, axis: int) -> int:
    return sum(1 for extent in shape[:axis] if extent == ir.ShapedType.get_dynamic_size())


def _only_store(slot: ir.Value):
    """The value stored to a rank-0 stack slot, when one store writes it."""
    if isinstance(slot.owner, ir.Block) or _op(slot).name != "memref.alloca":
        return None
    stores = [use.owner for use in slot.uses if use.owner.operation.name == "memref.store"]
    if len(stores) != 1 or stores[0].operation.operands[1] != slot:
        return None
    return stores[0].operation.operands[0]


def _in_loop(op: ir.Operation, chunk_loop: ir.Operation) -> bool:
    """Can `op` run more than once per iteration of `chunk_loop`?"""
    while op != chunk_loop:
        if _in_cycle(op.block):
            return True
        op = op.parent.operation
        if op.name in _LOOPS and op != chunk_loop:
            return True
    return False


def _in_cycle(block: ir.Block) -> bool:
    seen, work = set(), list(_successors(block))
    while work:
        succ = work.pop()
        if succ == block:
            return True
        if succ not in seen:
            seen.add(succ)
            work.extend(_successors(succ))
    return False


def _successors(block: ir.Block) -> list:
    operations = list(block.operations)
    return list(operations[-1].operation.successors) if operations else []


def _element_bytes(element: ir.Type, loc) -> int:
    width = getattr(element, "width", None)
    if not width:
        raise UnsupportedConstructError(f"a temporary array of {element} in a GPU kernel", loc)
    return max(1, width // 8)
