"""Structured operations: NumPy reductions along an axis as `linalg.generic`.

The rules emit one generic per reduction (`reduce_along`): its iteration
space is the source's axes with the reduced one last, its region the fold of
one element into an accumulator, the output holding the start values. That
is the linalg stage `inspect_mlir` shows. The op carries the name of the
associative operation that merges two partial folds of a line
(`COMBINE_ATTR`), which a target that splits lines needs and which a
region alone does not say.

Each target lowers the generics in its pass pipeline: the CPU (and any
target, `lower_as_loops`) as a parallel loop over the outputs, each folding
its line in order; the GPU by its schedules (targets/gpu/structured.py).
`AxisReduction` gives a lowering what it needs: extents, elements, the
region applied to one element, the combine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .._mlir import arith, ir, linalg, memref, scf
from .build import const_index
from .loops import delinearize, flat_parallel, product
from .values import ArrayValue

COMBINE_ATTR = "numba_mlir_gpu.combine"

_PARALLEL = "#linalg.iterator_type<parallel>"
_REDUCTION = "#linalg.iterator_type<reduction>"


def reduce_along(source: ArrayValue, axis: int, out: ArrayValue,
                 step: Callable[[ir.Value, ir.Value], ir.Value], combine: str) -> None:
    """out[idx] = step(source[idx with k at `axis`], out[idx]) for k in
    order, as one linalg.generic; `step(element, accumulator)` builds the
    fold (in the region: the element as stored, the accumulator as `out`'s
    element type) and `combine` names how two partial folds merge
    (a key of COMBINES)."""
    ndim = source.type.ndim
    dims = [ir.AffineDimExpr.get(d) for d in range(ndim)]
    # iteration dims: the output's axes in order, then the reduced axis
    source_map = [dims[a] if a < axis else dims[ndim - 1] if a == axis else dims[a - 1]
                  for a in range(ndim)]
    maps = [ir.AffineMap.get(ndim, 0, source_map), ir.AffineMap.get(ndim, 0, dims[:ndim - 1])]
    iterators = [ir.Attribute.parse(_PARALLEL)] * (ndim - 1) + [ir.Attribute.parse(_REDUCTION)]
    generic = linalg.GenericOp([], [source.memref], [out.memref],
                               ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                               ir.ArrayAttr.get(iterators))
    element_type = ir.MemRefType(source.memref.type).element_type
    acc_type = ir.MemRefType(out.memref.type).element_type
    block = generic.regions[0].blocks.append(element_type, acc_type)
    with ir.InsertionPoint(block):
        linalg.YieldOp([step(block.arguments[0], block.arguments[1])])
    generic.attributes[COMBINE_ATTR] = ir.StringAttr.get(combine)


def _zero(ty: ir.Type) -> ir.Value:
    if isinstance(ty, ir.IntegerType):
        return arith.ConstantOp(ty, 0).result
    return arith.ConstantOp(ty, ir.FloatAttr.get(ty, 0.0)).result


def _add(a: ir.Value, b: ir.Value) -> ir.Value:
    return (arith.AddIOp if isinstance(a.type, ir.IntegerType) else arith.AddFOp)(a, b).result


# combine name -> (identity of an accumulator type, merge of two partials)
COMBINES = {"add": (_zero, _add)}


class PartialFolds:
    """The reduction protocol of parallel/reduction.py for partial folds of
    one accumulator (what a GPU block combines across its threads)."""

    def __init__(self, acc_type: ir.Type, combine: str):
        self.names, self.types = ["partial"], [acc_type]
        self._identity, self._merge = COMBINES[combine]

    def identity_values(self) -> list:
        return [self._identity(self.types[0])]

    def combine_values(self, a: list, b: list) -> list:
        return [self._merge(a[0], b[0])]


@dataclass
class AxisReduction:
    """One generic of `reduce_along`, read back by a lowering."""
    op: ir.Operation
    source: ir.Value
    out: ir.Value
    axis: int                # the source axis reduced
    combine: str

    @classmethod
    def of(cls, op: ir.Operation) -> "AxisReduction":
        source, out = op.operands[0], op.operands[1]
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        ndim = ir.MemRefType(source.type).rank
        reduced = ir.AffineDimExpr.get(ndim - 1)
        axis = next(a for a, expr in enumerate(maps[0].results) if expr == reduced)
        return cls(op, source, out, axis, ir.StringAttr(op.attributes[COMBINE_ATTR]).value)

    @property
    def acc_type(self) -> ir.Type:
        return ir.MemRefType(self.out.type).element_type

    def out_extents(self) -> list:
        return [memref.DimOp(self.out, const_index(a)).result
                for a in range(ir.MemRefType(self.out.type).rank)]

    def length(self) -> ir.Value:
        return memref.DimOp(self.source, const_index(self.axis)).result

    def element(self, out_indices: list, k: ir.Value) -> ir.Value:
        indices = out_indices[:self.axis] + [k] + out_indices[self.axis:]
        return memref.LoadOp(self.source, indices).result

    def step(self, element: ir.Value, acc: ir.Value) -> ir.Value:
        """The region applied at the insertion point (cloned)."""
        block = self.op.regions[0].blocks[0]
        mapping = {block.arguments[0]: element, block.arguments[1]: acc}
        result = None
        for inner in block.operations:
            if inner.name == "linalg.yield":
                result = mapping.get(inner.operands[0], inner.operands[0])
                break
            clone = inner.clone()
            for i, operand in enumerate(clone.operands):
                if operand in mapping:
                    clone.operands[i] = mapping[operand]
            for old, new in zip(inner.results, clone.results):
                mapping[old] = new
        return result

    def fold_line(self, out_indices: list, start: ir.Value, lo: ir.Value,
                  hi: ir.Value) -> ir.Value:
        """`start` folded with the elements lo..hi-1 of a line, in order."""
        loop = scf.ForOp(lo, hi, const_index(1), [start])
        with ir.InsertionPoint(loop.body):
            scf.YieldOp([self.step(self.element(out_indices, loop.induction_variable),
                                   loop.inner_iter_args[0])])
        return loop.results[0]


def generics(module: ir.Module) -> list:
    """The generics of `reduce_along` in the module, outside GPU modules."""
    found = []

    def visit(op):
        if op.name == "linalg.generic" and COMBINE_ATTR in op.attributes:
            found.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return found


def lower_as_loops(op: ir.Operation) -> None:
    """A generic of `reduce_along` as a parallel loop over the outputs, each
    folding its line in order (Numba's order); replaces `op`."""
    red = AxisReduction.of(op)
    with ir.InsertionPoint(op), op.location:
        extents = red.out_extents()
        length = red.length()

        def body(k):
            indices = delinearize(k, extents)
            start = memref.LoadOp(red.out, indices).result
            memref.StoreOp(red.fold_line(indices, start, const_index(0), length), red.out, indices)
        flat_parallel(product(extents), body)
    op.erase()
