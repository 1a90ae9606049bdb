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
from .build import add_values, cmpf, cmpi, const_index, select, zero_of
from .loops import delinearize, flat_parallel, product
from .values import ArrayValue

COMBINE_ATTR = "numba_mlir_gpu.combine"

_PARALLEL = "#linalg.iterator_type<parallel>"
_REDUCTION = "#linalg.iterator_type<reduction>"


def reduce_along(source: ArrayValue, axis: int, outs: list,
                 step: Callable[[ir.Value, list, ir.Value], list], combine: str) -> None:
    """outs[..][idx] = step(source[idx with k at `axis`], [out[idx] ...], k)
    for k in order, as one linalg.generic; `step(element, accumulators, k)`
    builds the fold (in the region: the element as stored, the accumulators
    as the outputs' element types, k the position along the line as an
    index) and `combine` names how two partial folds merge (a key of
    COMBINES)."""
    ndim = source.type.ndim
    dims = [ir.AffineDimExpr.get(d) for d in range(ndim)]
    # iteration dims: the output's axes in order, then the reduced axis
    source_map = [dims[a] if a < axis else dims[ndim - 1] if a == axis else dims[a - 1]
                  for a in range(ndim)]
    maps = [ir.AffineMap.get(ndim, 0, source_map), ir.AffineMap.get(ndim, 0, dims[:ndim - 1])]
    iterators = [ir.Attribute.parse(_PARALLEL)] * (ndim - 1) + [ir.Attribute.parse(_REDUCTION)]
    maps += [maps[1]] * (len(outs) - 1)
    generic = linalg.GenericOp([], [source.memref], [out.memref for out in outs],
                               ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                               ir.ArrayAttr.get(iterators))
    element_type = ir.MemRefType(source.memref.type).element_type
    block = generic.regions[0].blocks.append(
        element_type, *(ir.MemRefType(out.memref.type).element_type for out in outs))
    with ir.InsertionPoint(block):
        k = linalg.IndexOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(64), ndim - 1)).result
        linalg.YieldOp(step(block.arguments[0], list(block.arguments[1:]), k))
    generic.attributes[COMBINE_ATTR] = ir.StringAttr.get(combine)


def _zero(ty: ir.Type) -> ir.Value:
    return zero_of(ty)


def _sums(types_: list) -> list:
    return [_zero(ty) for ty in types_]


def _add(a: list, b: list) -> list:
    return [add_values(x, y) for x, y in zip(a, b)]


def _positions(types_: list) -> list:
    """(any value, position -1): no element yet."""
    return [_zero(types_[0]), arith.ConstantOp(types_[1], -1).result]


def extreme_beats(v: ir.Value, best: ir.Value, largest: bool, signed: bool = True) -> ir.Value:
    """Does `v` replace `best` as the serial argmin/argmax scan would (the
    first NaN wins and stays; otherwise strictly smaller/larger)?"""
    if isinstance(v.type, ir.IntegerType):
        return cmpi(("s" if signed else "u") + ("gt" if largest else "lt"), v, best)
    beats = cmpf("OGT" if largest else "OLT", v, best)
    return arith.OrIOp(beats, arith.AndIOp(cmpf("UNO", v, v),
                                           cmpf("ORD", best, best)).result).result


def _first_extreme(largest: bool, signed: bool = True):
    """Merge of two partial argmin/argmax scans (value, position): the
    extreme value, the earlier position among equals; a NaN, the earliest."""
    def merge(a: list, b: list) -> list:
        (av, ai), (bv, bi) = a, b
        earlier = cmpi("slt", bi, ai)
        if isinstance(av.type, ir.IntegerType):
            ties = cmpi("eq", bv, av)
        else:
            ties = arith.OrIOp(cmpf("OEQ", bv, av), arith.AndIOp(
                cmpf("UNO", bv, bv), cmpf("UNO", av, av)).result).result
        take = arith.OrIOp(extreme_beats(bv, av, largest, signed),
                           arith.AndIOp(ties, earlier).result).result
        valid_b = cmpi("sge", bi, arith.ConstantOp(bi.type, 0).result)
        empty_a = cmpi("slt", ai, arith.ConstantOp(ai.type, 0).result)
        take = arith.AndIOp(valid_b, arith.OrIOp(empty_a, take).result).result
        return [select(take, bv, av), select(take, bi, ai)]
    return merge


# combine name -> (identities of the accumulators' types, merge of two partials)
COMBINES = {"add": (_sums, _add),
            "argmin": (_positions, _first_extreme(False)),
            "argmax": (_positions, _first_extreme(True)),
            "argmin_unsigned": (_positions, _first_extreme(False, signed=False)),
            "argmax_unsigned": (_positions, _first_extreme(True, signed=False))}


class PartialFolds:
    """The reduction protocol of parallel/reduction.py for partial folds of
    a generic's accumulators (what a GPU block combines across its threads)."""

    def __init__(self, acc_types: list, combine: str):
        self.names = [f"partial{i}" for i in range(len(acc_types))]
        self.types = list(acc_types)
        self._identity, self._merge = COMBINES[combine]

    def identity_values(self) -> list:
        return self._identity(self.types)

    def combine_values(self, a: list, b: list) -> list:
        return self._merge(a, b)


@dataclass
class AxisReduction:
    """One generic of `reduce_along`, read back by a lowering."""
    op: ir.Operation
    source: ir.Value
    outs: list
    axis: int                # the source axis reduced
    combine: str

    @classmethod
    def of(cls, op: ir.Operation) -> "AxisReduction":
        source, outs = op.operands[0], list(op.operands[1:])
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        ndim = ir.MemRefType(source.type).rank
        reduced = ir.AffineDimExpr.get(ndim - 1)
        axis = next(a for a, expr in enumerate(maps[0].results) if expr == reduced)
        return cls(op, source, outs, axis, ir.StringAttr(op.attributes[COMBINE_ATTR]).value)

    @property
    def acc_types(self) -> list:
        return [ir.MemRefType(out.type).element_type for out in self.outs]

    def partial_folds(self) -> PartialFolds:
        return PartialFolds(self.acc_types, self.combine)

    def out_extents(self) -> list:
        return [memref.DimOp(self.outs[0], const_index(a)).result
                for a in range(ir.MemRefType(self.outs[0].type).rank)]

    def load_outs(self, indices: list) -> list:
        return [memref.LoadOp(out, indices).result for out in self.outs]

    def store_outs(self, values: list, indices: list) -> None:
        for value, out in zip(values, self.outs):
            memref.StoreOp(value, out, indices)

    def length(self) -> ir.Value:
        return memref.DimOp(self.source, const_index(self.axis)).result

    def element(self, out_indices: list, k: ir.Value) -> ir.Value:
        indices = out_indices[:self.axis] + [k] + out_indices[self.axis:]
        return memref.LoadOp(self.source, indices).result

    def step(self, element: ir.Value, accs: list, k: ir.Value) -> list:
        """The region applied at the insertion point (cloned), for the
        element at position k of its line."""
        block = self.op.regions[0].blocks[0]
        mapping = dict(zip(block.arguments, [element] + list(accs)))
        for inner in block.operations:
            if inner.name == "linalg.yield":
                return [mapping.get(v, v) for v in inner.operands]
            if inner.name == "linalg.index":
                mapping[inner.results[0]] = k
                continue
            clone = inner.clone()
            for i, operand in enumerate(clone.operands):
                if operand in mapping:
                    clone.operands[i] = mapping[operand]
            for old, new in zip(inner.results, clone.results):
                mapping[old] = new
        raise AssertionError("a linalg.generic region ends with linalg.yield")

    def step_at(self, out_indices: list, k: ir.Value, accs: list) -> list:
        return self.step(self.element(out_indices, k), accs, k)

    def fold_line(self, out_indices: list, start: list, lo: ir.Value, hi: ir.Value) -> list:
        """`start` folded with the elements lo..hi-1 of a line, in order."""
        loop = scf.ForOp(lo, hi, const_index(1), start)
        with ir.InsertionPoint(loop.body):
            scf.YieldOp(self.step_at(out_indices, loop.induction_variable,
                                     list(loop.inner_iter_args)))
        return list(loop.results)


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

        def body(o):
            indices = delinearize(o, extents)
            red.store_outs(red.fold_line(indices, red.load_outs(indices), const_index(0), length),
                           indices)
        flat_parallel(product(extents), body)
    op.erase()
