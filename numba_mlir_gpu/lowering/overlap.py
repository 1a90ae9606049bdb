"""Reading a view while writing another array (`a[1:] = a[:-1]`).

NumPy reads all of a source that overlaps its destination before writing,
so such a source is copied first. A GPU kernel cannot allocate the copy:
there, as Numba's own `fancy_setslice` does on the CPU, the memory spans
are compared at run time; a source disjoint from the destination, or the
destination itself, is read in place, and any other overlap raises.
"""
from __future__ import annotations

from numba.core import types
from numba.np.numpy_support import as_dtype

from .._mlir import arith, ir, memref
from .arrays import copy_array
from .build import cmpi, const, const_index, element_address, logical_not
from .values import ArrayValue

OVERLAP_IN_KERNEL = ("numba-mlir-gpu: inside a GPU kernel, an array view cannot be assigned into "
                     "an array it partly overlaps (no memory to copy it to)",)


def read_source(lw, source, dests: list):
    """What to read while writing the arrays `dests`: `source` itself or a copy."""
    others = [d for d in dests if d is not source]
    if not isinstance(source, ArrayValue) or not source.view or not others:
        return source
    if lw.target.can_allocate(lw):
        return copy_array(lw, source)
    for dest in others:
        lw.errors.raise_if(lw, _partial_overlap(source, dest),
                           lw.errors.code(NotImplementedError, OVERLAP_IN_KERNEL))
    return source


class _Span:
    """Byte range [lo, hi) an array's elements occupy, its first element's
    address, strides and sizes (index values)."""

    def __init__(self, array: ArrayValue):
        value = array.memref
        rank = ir.MemRefType(value.type).rank
        meta = memref.ExtractStridedMetadataOp(value)
        offset = meta.results[1]
        self.sizes = list(meta.results[2:2 + rank])
        self.strides = list(meta.results[2 + rank:2 + 2 * rank])
        itemsize = as_dtype(array.type.dtype).itemsize
        item = const_index(itemsize)
        self.start = element_address(value, offset, itemsize)
        low = high = const_index(0)
        self.empty = const(types.boolean, 0)
        one = const_index(1)
        for size, stride in zip(self.sizes, self.strides):
            reach = arith.MulIOp(arith.SubIOp(size, one).result, stride).result
            low = arith.AddIOp(low, arith.MinSIOp(reach, const_index(0)).result).result
            high = arith.AddIOp(high, arith.MaxSIOp(reach, const_index(0)).result).result
            self.empty = arith.OrIOp(self.empty, cmpi("eq", size, const_index(0))).result
        self.lo = arith.AddIOp(self.start, arith.MulIOp(low, item).result).result
        self.hi = arith.AddIOp(self.start,
                               arith.MulIOp(arith.AddIOp(high, one).result, item).result).result


def _partial_overlap(source: ArrayValue, dest: ArrayValue) -> ir.Value:
    """i1: the spans intersect and `source` is not laid out exactly as `dest`."""
    s, d = _Span(source), _Span(dest)
    intersect = arith.AndIOp(cmpi("slt", s.lo, d.hi), cmpi("slt", d.lo, s.hi)).result
    nonempty = arith.AndIOp(logical_not(s.empty), logical_not(d.empty)).result
    overlap = arith.AndIOp(intersect, nonempty).result
    same = cmpi("eq", s.start, d.start)
    if len(s.sizes) == len(d.sizes):
        for a, b in zip(s.sizes + s.strides, d.sizes + d.strides):
            same = arith.AndIOp(same, cmpi("eq", a, b)).result
    else:
        same = const(types.boolean, 0)
    return arith.AndIOp(overlap, logical_not(same)).result


def disjoint(a: ArrayValue, b: ArrayValue) -> ir.Value:
    """i1: the two arrays' elements share no byte (either may be empty)."""
    x, y = _Span(a), _Span(b)
    intersect = arith.AndIOp(cmpi("slt", x.lo, y.hi), cmpi("slt", y.lo, x.hi)).result
    return arith.OrIOp(logical_not(intersect), arith.OrIOp(x.empty, y.empty).result).result
