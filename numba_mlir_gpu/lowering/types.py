"""Numba types -> MLIR types."""
from __future__ import annotations

from numba.core import types

from .._mlir import ir
from .errors import UnsupportedConstructError

# Complex numbers are scalars too: one SSA value of MLIR's complex<f32> or
# complex<f64> (a struct {float, float} in LLVM, as in Numba and NumPy).
# datetime64/timedelta64 are an i64 each (Numba's and NumPy's layout; NaT is
# INT64_MIN); their unit lives in the Numba type only (lowering/datetimes.py).
DATETIME_TYPES = (types.NPDatetime, types.NPTimedelta)
SCALAR_TYPES = (types.Boolean, types.Integer, types.Float, types.Complex) + DATETIME_TYPES


def is_datetime(ty: types.Type) -> bool:
    """datetime64[unit] or timedelta64[unit]."""
    return isinstance(types.unliteral(ty), DATETIME_TYPES)


def is_scalar(ty: types.Type) -> bool:
    return isinstance(ty, SCALAR_TYPES)


def element_type(ty: types.Type) -> types.Type:
    """The element type of an array type, or the (unliteral) scalar type itself."""
    ty = types.unliteral(ty)
    return ty.dtype if isinstance(ty, types.Array) else ty


def is_signed(ty: types.Type) -> bool:
    return isinstance(ty, types.Integer) and ty.signed


def scalar_type(ty: types.Type, loc=None) -> ir.Type:
    if isinstance(ty, types.Boolean):
        return ir.IntegerType.get_signless(1)
    if isinstance(ty, types.Integer):
        return ir.IntegerType.get_signless(ty.bitwidth)
    if isinstance(ty, types.Float):
        if ty.bitwidth == 32:
            return ir.F32Type.get()
        if ty.bitwidth == 64:
            return ir.F64Type.get()
    if isinstance(ty, types.Complex):
        return ir.ComplexType.get(scalar_type(ty.underlying_float, loc))
    if isinstance(ty, DATETIME_TYPES):
        return ir.IntegerType.get_signless(64)
    raise UnsupportedConstructError(f"values of type {ty}", loc)


def storage_type(ty: types.Type, loc=None) -> ir.Type:
    """Element type in memory: booleans are bytes (as in NumPy; MLIR cannot
    load or store i1 elements)."""
    if isinstance(ty, types.Boolean):
        return ir.IntegerType.get_signless(8)
    return scalar_type(ty, loc)


def memref_type(ty: types.Array, loc=None) -> ir.MemRefType:
    """A dynamically shaped memref; C-contiguous arrays keep the identity
    layout, any other layout carries dynamic strides and offset."""
    element = storage_type(ty.dtype, loc)
    shape = [ir.ShapedType.get_dynamic_size()] * ty.ndim
    if ty.layout == "C":
        return ir.MemRefType.get(shape, element)
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    layout = ir.StridedLayoutAttr.get(dyn, [dyn] * ty.ndim)
    return ir.MemRefType.get(shape, element, layout=layout)


def is_fortran(ty: types.Type) -> bool:
    """A Fortran-ordered array of more than one axis. We allocate it as the
    transpose of a C-ordered buffer of the reversed extents, and the entry
    returns that buffer, which the wrapper transposes back (wrapper.py)."""
    return isinstance(ty, types.Array) and ty.layout == "F" and ty.ndim > 1


def strided_memref_type(ty: types.Array, loc=None) -> ir.MemRefType:
    """A memref of any layout (dynamic strides and offset): views, and the
    array parameters of functions other than the entry."""
    return memref_type(ty.copy(layout="A"), loc)


def param_type(ty: types.Type, loc=None, entry: bool = True) -> ir.Type:
    """The MLIR parameter type of a flat argument: callees take arrays of any
    layout, so that views can be passed to them."""
    if isinstance(ty, types.Array) and not entry:
        return strided_memref_type(ty, loc)
    return mlir_type(ty, loc)


# Values known at compile time: passed to no MLIR function, bound as Python
# objects instead.
STATIC_TYPES = (types.NoneType, types.Omitted, types.StringLiteral, types.NumberClass,
                types.DType, types.Function, types.Dispatcher, types.Module)


def is_static(ty: types.Type) -> bool:
    return isinstance(ty, STATIC_TYPES)


def static_value(ty: types.Type):
    """The Python object a compile-time argument of type `ty` stands for."""
    if isinstance(ty, types.Omitted):
        return ty.value
    if isinstance(ty, types.Literal):
        return ty.literal_value
    if isinstance(ty, types.NoneType):
        return None
    return ty


def flat_types(ty: types.Type, loc=None) -> list[types.Type]:
    """The scalars and arrays a value of `ty` is passed as, in order."""
    if isinstance(ty, types.BaseTuple):
        return [t for item in ty.types for t in flat_types(item, loc)]
    if is_static(ty):
        return []
    if is_scalar(ty) or isinstance(ty, types.Array):
        return [ty]
    if is_optional_scalar(ty) or is_optional_array(ty):
        return [types.boolean, ty.type]      # whether it holds a value, the value
    raise UnsupportedConstructError(f"arguments or results of type {ty}", loc)


def is_optional_scalar(ty: types.Type) -> bool:
    """Optional(T) of a scalar T: `z = None` in one branch, `z = y` in another."""
    return isinstance(ty, types.Optional) and is_scalar(types.unliteral(ty.type))


def is_optional_array(ty: types.Type) -> bool:
    """Optional(array): `z = None` in one branch, `z = a` in another; a
    flag and a memref (an empty one when None)."""
    return isinstance(ty, types.Optional) and isinstance(ty.type, types.Array)


def mlir_type(ty: types.Type, loc=None) -> ir.Type:
    if isinstance(ty, types.Array):
        return memref_type(ty, loc)
    return scalar_type(ty, loc)


def index_type() -> ir.Type:
    return ir.IndexType.get()


def i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)
