"""Small builders for the MLIR we emit; all insert at the current point."""
from __future__ import annotations

from numba.core import types

from .._mlir import arith, complex_dialect, func, ir, memref
from .types import index_type, scalar_type


def const(ty: types.Type, value) -> ir.Value:
    mty = scalar_type(ty)
    if isinstance(ty, types.Complex):
        part = scalar_type(ty.underlying_float)
        value = complex(value)
        return complex_dialect.ConstantOp(mty, ir.ArrayAttr.get(
            [ir.FloatAttr.get(part, value.real), ir.FloatAttr.get(part, value.imag)])).result
    if isinstance(ty, types.Float):
        return arith.ConstantOp(mty, ir.FloatAttr.get(mty, float(value))).result
    if isinstance(ty, types.Integer) and not ty.signed and value >= 2 ** (ty.bitwidth - 1):
        value -= 2 ** ty.bitwidth        # MLIR integer attrs are signless
    return arith.ConstantOp(mty, ir.IntegerAttr.get(mty, int(value))).result


def zero_of(ty: ir.Type) -> ir.Value:
    """The zero of an MLIR scalar type (integer, float or complex)."""
    if isinstance(ty, (ir.IntegerType, ir.IndexType)):
        return arith.ConstantOp(ty, ir.IntegerAttr.get(ty, 0)).result
    if isinstance(ty, ir.ComplexType):
        part = ty.element_type
        return complex_dialect.ConstantOp(ty, ir.ArrayAttr.get(
            [ir.FloatAttr.get(part, 0.0), ir.FloatAttr.get(part, 0.0)])).result
    return arith.ConstantOp(ty, ir.FloatAttr.get(ty, 0.0)).result


def add_values(a: ir.Value, b: ir.Value) -> ir.Value:
    """a + b of one MLIR scalar type (integer, float or complex)."""
    if isinstance(a.type, ir.ComplexType):
        return complex_dialect.AddOp(a, b).result
    op = arith.AddIOp if isinstance(a.type, (ir.IntegerType, ir.IndexType)) else arith.AddFOp
    return op(a, b).result


def const_index(value: int) -> ir.Value:
    return arith.ConstantOp(index_type(), ir.IntegerAttr.get(index_type(), value)).result


def const_i64(value: int) -> ir.Value:
    return const(types.int64, value)


def to_index(value: ir.Value) -> ir.Value:
    if isinstance(value.type, ir.IndexType):
        return value
    return arith.IndexCastOp(index_type(), value).result


def to_i64(value: ir.Value) -> ir.Value:
    if isinstance(value.type, ir.IndexType):
        return arith.IndexCastOp(ir.IntegerType.get_signless(64), value).result
    return value


def element_address(value: ir.Value, offset: ir.Value = None, itemsize: int = 0) -> ir.Value:
    """The address (index) of a memref's first element: its aligned pointer,
    plus `offset` elements of `itemsize` bytes (its strided offset) if given."""
    pointer = memref.ExtractAlignedPointerAsIndexOp(value).result
    if offset is None:
        return pointer
    return arith.AddIOp(pointer, arith.MulIOp(offset, const_index(itemsize)).result).result


# Values of a reduction kept in buffers (partials of chunks or blocks): MLIR's
# LLVM lowering has no memrefs of i1, so booleans are bytes in memory.

def memory_type(ty: ir.Type) -> ir.Type:
    return ir.IntegerType.get_signless(8) if _is_i1(ty) else ty


def value_buffer(shape: list, ty: ir.Type) -> ir.Value:
    """A new buffer of `shape` for values of type `ty` (memory_type)."""
    return memref.AllocOp(ir.MemRefType.get(shape, memory_type(ty)), [], []).result


def store_value(value: ir.Value, buffer: ir.Value, indices: list) -> None:
    if _is_i1(value.type):
        value = arith.ExtUIOp(ir.IntegerType.get_signless(8), value).result
    memref.StoreOp(value, buffer, indices)


def load_value(buffer: ir.Value, indices: list, ty: ir.Type) -> ir.Value:
    value = memref.LoadOp(buffer, indices).result
    return arith.TruncIOp(ty, value).result if _is_i1(ty) else value


def _is_i1(ty: ir.Type) -> bool:
    return isinstance(ty, ir.IntegerType) and ty.width == 1


def dim(array: ir.Value, axis: int) -> ir.Value:
    """Size of `axis` as an index value."""
    return memref.DimOp(array, const_index(axis)).result


def logical_not(flag: ir.Value) -> ir.Value:
    """not of an i1."""
    return arith.XOrIOp(flag, const(types.boolean, 1)).result


def select(cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.SelectOp(cond, a, b).result


def cmpi(pred: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.CmpIOp(getattr(arith.CmpIPredicate, pred), a, b).result


def cmpf(pred: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.CmpFOp(getattr(arith.CmpFPredicate, pred), a, b).result


def less_than(a: ir.Value, b: ir.Value, ty: types.Type) -> ir.Value:
    """`a < b` in the order of the Numba scalar type `ty` (false with a NaN)."""
    if isinstance(ty, types.Float):
        return cmpf("OLT", a, b)
    return cmpi("slt" if getattr(ty, "signed", False) else "ult", a, b)


def stack_copy(buffer: ir.Value) -> ir.Value:
    """`buffer` (a static-shaped memref) copied whole into a `memref.alloca` of
    its type in the enclosing function's entry block (so a loop around the
    current point does not grow the stack). Host code then reads the copy, so
    `buffer` can stay device memory: on the GPU the copy is one cuMemcpy,
    ordered after the launches (runtime/placement.py), and costs no page fault."""
    op = ir.InsertionPoint.current.block.owner.operation
    while op.name != "func.func":
        op = op.parent.operation
    with ir.InsertionPoint.at_block_begin(op.regions[0].blocks[0]):
        host = memref.AllocaOp(ir.MemRefType(buffer.type), [], []).result
    memref.CopyOp(buffer, host)
    return host


def declare_function(module: ir.Module, symbol: str, inputs: list, results: list) -> str:
    """An external function of the module (resolved by the engine), declared
    once."""
    if symbol not in ir.SymbolTable(module.operation):
        with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
            decl = func.FuncOp(symbol, ir.FunctionType.get(inputs, results))
            decl.attributes["sym_visibility"] = ir.StringAttr.get("private")
    return symbol


def constant_global(module: ir.Module, name: str, data, element: ir.Type) -> ir.Value:
    """A constant memref.global `name` of the module holding the NumPy array
    `data` (elements of MLIR type `element`), read here."""
    static = ir.MemRefType.get(list(data.shape), element)
    with ir.InsertionPoint(module.body):
        memref.GlobalOp(name, ir.TypeAttr.get(static), sym_visibility="private",
                        initial_value=ir.DenseElementsAttr.get(
                            data, type=ir.RankedTensorType.get(list(data.shape), element)),
                        constant=True)
    return memref.GetGlobalOp(static, name).result
