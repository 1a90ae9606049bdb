"""Python-side values for Numba variables that are not plain scalars.

Scalars live in stack slots (rank-0 memrefs, promoted by mem2reg); the
values here are bound once, as SSA values or compile-time objects.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from numba.core import types

from .._mlir import ir


@dataclass
class ArrayValue:
    memref: ir.Value
    type: types.Array
    origin: Optional[int] = None   # argument index this array is, if any
    view: bool = False             # aliases part of another array (a strided memref)
    # Fortran-ordered arrays we allocate: the C-ordered buffer of reversed
    # extents that `memref` transposes (what the entry returns for them)
    storage: Optional[ir.Value] = None


@dataclass
class SliceValue:
    """A slice object: i64 values, None where omitted."""
    start: Optional[ir.Value]
    stop: Optional[ir.Value]
    step: Optional[ir.Value]


@dataclass
class TupleValue:
    items: list
    type: types.BaseTuple


@dataclass
class FlatValue:
    """`a.flat`: the elements of `array` in C order, indexed by one integer."""
    array: ArrayValue


@dataclass
class PyValue:
    """A compile-time Python object: a module, function, dtype, constant."""
    obj: Any


@dataclass
class ExceptionValue:
    """An exception instance built in compiled code, raised later."""
    cls: type
    args: tuple


@dataclass
class BoundMethod:
    receiver: Any
    name: str


@dataclass
class RangeValue:
    start: ir.Value
    stop: ir.Value
    step: ir.Value


@dataclass
class OptionalValue:
    """A value of Optional(scalar) or Optional(array): whether it holds one
    (i1) and the value (meaningless when it does not): an SSA scalar, or an
    ArrayValue (an empty stack placeholder when None, never freed)."""
    valid: ir.Value
    value: Any                 # ir.Value | ArrayValue
    type: Any                  # the Optional type


@dataclass
class OptionalSlots:
    """An Optional(scalar) variable's storage: a byte flag and the value's
    slot, written by every assignment (None clears the flag)."""
    valid: ir.Value
    value: ir.Value


@dataclass
class OptionalArraySlot:
    """An Optional(array) variable: its flag's slot (a byte, written by every
    assignment) and the array it holds now, rebound by every assignment; a
    variable assigned on several paths is carried between blocks as arrays
    are (carried.py), its flag merging like a scalar's."""
    valid: ir.Value
    array: ArrayValue


@dataclass
class RangeSlots:
    """A range variable's storage: rank-0 i64 slots (memref<i64>) of its
    start, stop and step, written by every assignment (function.py)."""
    start: ir.Value
    stop: ir.Value
    step: ir.Value

    def slots(self) -> tuple:
        return self.start, self.stop, self.step


@dataclass
class RangeIter:
    counter: ir.Value      # memref<i64> slot holding the next value
    stop: ir.Value
    step: ir.Value


@dataclass
class EnumerateValue:
    """enumerate(iterable, start), before iteration starts."""
    iterable: object
    type: object              # the iterable's Numba type
    start: object = None      # i64, or None for 0


@dataclass
class NdEnumerateValue:
    """np.ndenumerate(array), before iteration starts."""
    array: "ArrayValue"


@dataclass
class NdIndexValue:
    """np.ndindex(shape), before iteration starts: the extents (i64)."""
    extents: list


@dataclass
class ZipValue:
    """zip(a, b, ...), before iteration starts."""
    iterables: list
    types: list               # the iterables' Numba types


@dataclass
class IterPair:
    value: ir.Value
    valid: ir.Value


def any_array(values) -> bool:
    """Is one of `values` an array (an operation on it is element-wise)?"""
    return any(isinstance(v, ArrayValue) for v in values)


@dataclass
class ReturnPlan:
    """How the wrapper rebuilds Numba's return value from the MLIR results."""
    type: types.Type
    array_origins: list = field(default_factory=list)  # per flat array: arg index or None


# The mark of the right operand's read in the loop Numba's parfor pass makes
# for `A op= B` (frontend/typed_ir.py sets it; lowering/expressions.py
# broadcasts the read): an attribute of the getitem expression.
BROADCAST_READ = "nmg_broadcast_read"
