"""Compare-and-exchange markers (lowering/atomics.py) -> `llvm.cmpxchg`.

Buffer deallocation refuses `llvm.cmpxchg` (it declares no memory
effects), so the lowering calls a marker function and this runs after it,
on both targets: the element's address (the aligned pointer plus offset
and strides, as the memref's descriptor has them), then the exchange on
the integer of the element's width. In a kernel it becomes PTX `atom.cas`.
"""
from __future__ import annotations

from .._mlir import arith, ir, llvm, memref
from ..lowering.atomics import COMPARE_EXCHANGE_MARKER

# Atomicity is all an update needs: the end of the loop or kernel orders
# the updates with everything else.
_ORDER = llvm.AtomicOrdering.monotonic


def compare_exchanges(module) -> None:
    for op, _ in _marked_calls(module, COMPARE_EXCHANGE_MARKER):
        source, *indices, expected, new = op.operands
        with ir.InsertionPoint(op), op.location:
            pointer = _element_pointer(source, indices)
            pair = llvm.AtomicCmpXchgOp(pointer, expected, new, _ORDER, _ORDER).result
            found = llvm.ExtractValueOp(expected.type, pair, [0]).result
        op.results[0].replace_all_uses_with(found)
        op.erase()
    _erase_marked_functions(module, COMPARE_EXCHANGE_MARKER)


# Memory fences (kernel/rules.py: mem_fence): calls of `<FENCE_MARKER>block`
# (the work-group's scope) or `<FENCE_MARKER>system`, made `llvm.fence`
# acq_rel here, after deallocation, which refuses the fence as it refuses
# the exchange.
FENCE_MARKER = "_numba_mlir_gpu_fence_"


def fences(module) -> None:
    for op, scope in _marked_calls(module, FENCE_MARKER):
        with ir.InsertionPoint(op), op.location:
            llvm.FenceOp(llvm.AtomicOrdering.acq_rel,
                         syncscope="block" if scope == "block" else None)
        op.erase()
    _erase_marked_functions(module, FENCE_MARKER)


def _marked_calls(module, marker: str) -> list:
    """(call, the callee's name after `marker`) of the calls of marker functions."""
    calls = []

    def visit(op):
        if op.name == "func.call":
            name = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if name.startswith(marker):
                calls.append((op, name[len(marker):]))
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return calls


def _erase_marked_functions(module, marker: str) -> None:
    symbols = ir.SymbolTable(module.operation)
    for op in list(module.body.operations):
        if op.name == "func.func" and \
                ir.StringAttr(op.attributes["sym_name"]).value.startswith(marker):
            symbols.erase(op)


def _element_pointer(source: ir.Value, indices: list) -> ir.Value:
    """The address of source[indices] as an `!llvm.ptr`."""
    i64 = ir.IntegerType.get_signless(64)
    element_type = ir.MemRefType(source.type).element_type
    width = element_type.width if isinstance(element_type, ir.IntegerType) else \
        ir.FloatType(element_type).width
    rank = len(indices)
    metadata = memref.ExtractStridedMetadataOp(source).results
    element = metadata[1]                       # the offset, then index * stride per axis
    for index, stride in zip(indices, metadata[2 + rank:2 + 2 * rank]):
        element = arith.AddIOp(element, arith.MulIOp(index, stride).result).result
    base = arith.IndexCastOp(i64, memref.ExtractAlignedPointerAsIndexOp(source).result).result
    offset = arith.MulIOp(arith.IndexCastOp(i64, element).result,
                          arith.ConstantOp(i64, width // 8).result).result
    return llvm.IntToPtrOp(ir.Type.parse("!llvm.ptr"), arith.AddIOp(base, offset).result).result
