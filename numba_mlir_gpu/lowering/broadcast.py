"""NumPy broadcasting: the common shape of several operands, and an
operand's element at an index of that shape."""
from __future__ import annotations

from .._mlir import arith, ir
from .arrays import load_element
from .build import cmpi, const_index, dim, select
from .values import ArrayValue

# NumPy's broadcast_shapes message (np.where, np.clip, np.isclose, ... as Numba checks them)
SHAPE_MISMATCH = "shape mismatch: objects cannot be broadcast to a single shape"

BROADCAST_ERROR = "operands could not be broadcast together"


def broadcast_shape(lw, arrays: list, ndim: int, message: str = BROADCAST_ERROR) -> list:
    """The extents of the broadcast of `arrays` over `ndim` axes; raises
    ValueError(message) as NumPy does when they do not broadcast."""
    one = const_index(1)
    extents = []
    for axis in range(ndim):
        extent = one
        for array in arrays:
            lead = ndim - array.type.ndim
            if axis >= lead:
                d = dim(array.memref, axis - lead)
                extent = select(cmpi("eq", d, one), extent, d)
        extents.append(extent)
    failed = None
    for array in arrays:
        lead = ndim - array.type.ndim
        for axis in range(array.type.ndim):
            d = dim(array.memref, axis)
            bad = arith.AndIOp(cmpi("ne", d, one), cmpi("ne", d, extents[lead + axis])).result
            failed = bad if failed is None else arith.OrIOp(failed, bad).result
    if failed is not None:
        lw.errors.raise_if(lw, failed, lw.errors.code(ValueError, (message,)))
    return extents


def broadcast_element(value, indices: list) -> ir.Value:
    """The element of an operand at the output's `indices`: an extent of 1
    repeats, and after a shape mismatch (raised once the statement ends) the
    loop stays in bounds. A scalar is itself."""
    if not isinstance(value, ArrayValue):
        return value
    lead = len(indices) - value.type.ndim
    own = [select(cmpi("ult", indices[lead + axis], dim(value.memref, axis)),
                  indices[lead + axis], const_index(0))
           for axis in range(value.type.ndim)]
    return load_element(value, own)
