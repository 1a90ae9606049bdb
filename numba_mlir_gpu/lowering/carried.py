"""Array variables that flow between blocks: assigned more than once
(`x = a` in one branch, `x = b` in the other; Numba's SSA also makes these
from loops) or used in a block that their definition does not dominate.

Scalars live in stack slots, but a memref cannot be stored in one, so such
an array variable is passed along the control-flow edges of the function
instead: every block of the function body takes one block argument per
carried variable (a memref of any layout), and every branch between them
passes the variable's current value. A variable not yet assigned on some
path is passed as an empty placeholder, which a correct program never reads.
A new array assigned in a loop (`w = w - lr * grad`) is carried the same way:
upstream's ownership-based buffer deallocation frees each iteration's array
once the next one replaces it (the block arguments become the loop's
`scf.while` arguments, with ownership indicators). An Optional(array)
variable is carried as its array (the empty placeholder of a None) while its
flag lives in a slot, as a scalar does. A tuple of arrays (pynndescent's
heaps, `graph = make_heap(...)` in one branch, `graph = init_graph` in the
other) is carried as its arrays, one block argument each.
"""
from __future__ import annotations

from numba.core import ir as nir
from numba.core import types
from numba.core.analysis import compute_cfg_from_blocks
from numba.parfors.parfor import Parfor

from .._mlir import ir, memref
from .build import const, const_index
from .types import is_optional_array, strided_memref_type
from .values import ArrayValue, OptionalArraySlot, TupleValue


def _array_type(ty):
    """The array type of an array or Optional(array) variable, else None."""
    if isinstance(ty, types.Array):
        return ty
    return ty.type if is_optional_array(ty) else None


def _carried_arrays_of(ty) -> list:
    """The array types a variable of type `ty` is carried as: its array, or
    the items of a tuple of arrays; [] when it is not carried so."""
    if isinstance(ty, types.BaseTuple) and len(ty) and all(
            isinstance(t, types.Array) for t in ty.types):
        return list(ty.types)
    array = _array_type(ty)
    return [] if array is None else [array]


def carried_arrays(func_ir, typemap) -> list[str]:
    """Names of the array variables of the function body that need carrying."""
    blocks = func_ir.blocks
    defs: dict[str, list[int]] = {}
    uses: dict[str, set] = {}
    for label, block in blocks.items():
        for stmt in block.body:
            for var in stmt.list_vars():
                uses.setdefault(var.name, set()).add(label)
            if isinstance(stmt, nir.Assign):
                defs.setdefault(stmt.target.name, []).append(label)
            elif isinstance(stmt, Parfor):      # its init block runs in this block
                for inner in stmt.init_block.body:
                    if isinstance(inner, nir.Assign):
                        defs.setdefault(inner.target.name, []).append(label)
    dominators = compute_cfg_from_blocks(blocks).dominators()
    roots = _argument_roots(blocks)
    carried = []
    for name, labels in defs.items():
        if not _carried_arrays_of(typemap.get(name)):
            continue
        if roots.get(name) is not None:
            continue        # every assignment is the same argument (`a += 1` in a branch)
        if len(labels) > 1 or any(labels[0] not in dominators.get(u, ()) for u in uses[name]):
            carried.append(name)
    return sorted(carried)


def _argument_roots(blocks) -> dict:
    """Variable -> the argument index that every assignment of it is (through
    copies and in-place operators, which return their left operand), or None."""
    sources: dict[str, list] = {}
    for block in blocks.values():
        for stmt in block.body:
            if not isinstance(stmt, nir.Assign):
                continue
            value = stmt.value
            if isinstance(value, nir.Arg):
                source = ("arg", value.index)
            elif isinstance(value, nir.Var):
                source = ("var", value.name)
            elif isinstance(value, nir.Expr) and value.op == "inplace_binop":
                source = ("var", value.lhs.name)
            else:
                source = None
            sources.setdefault(stmt.target.name, []).append(source)
    roots: dict = {}

    def root(name, seen=()):
        if name in roots:
            return roots[name]
        if name in seen or name not in sources:
            return None
        found = set()
        for source in sources[name]:
            if source is None:
                found.add(None)
            elif source[0] == "arg":
                found.add(source[1])
            else:
                found.add(root(source[1], seen + (name,)))
        result = found.pop() if len(found) == 1 else None
        roots[name] = result
        return result

    for name in sources:
        root(name)
    return roots


class CarriedArrays:
    """The carried variables of one function and their block arguments."""

    def __init__(self, lw, names: list[str]):
        self.lw = lw
        self.names = names
        # per variable, the array types of its block arguments (flat, in order)
        self.arrays = [_carried_arrays_of(lw.typeof(n)) for n in names]
        self.types = [strided_memref_type(a, lw.loc) for arrays in self.arrays for a in arrays]
        self.placeholders: list = []
        self.flags: dict = {}          # Optional(array) variable -> its flag's slot

    def make_placeholders(self) -> None:
        """Empty arrays for variables not assigned yet (in the entry block)."""
        arrays = [a for per_name in self.arrays for a in per_name]
        for array, ty in zip(arrays, self.types):
            plain = memref.AllocaOp(
                _identity_layout(ty), [const_index(0)] * array.ndim, []).result
            self.placeholders.append(memref.CastOp(ty, plain).result)
        for name in self.names:
            if is_optional_array(self.lw.typeof(name)):
                self.flags[name] = flag = self.lw.new_slot(types.boolean)
                self.lw.store_slot(const(types.boolean, 0), flag, types.boolean)

    def bind_block_arguments(self, block) -> None:
        arguments = iter(block.arguments)
        for name, arrays in zip(self.names, self.arrays):
            items = [ArrayValue(next(arguments), a, view=True) for a in arrays]
            ty = self.lw.typeof(name)
            if isinstance(ty, types.BaseTuple):
                self.lw.scope.values[name] = TupleValue(items, ty)
            elif name in self.flags:
                self.lw.scope.values[name] = OptionalArraySlot(self.flags[name], items[0])
            else:
                self.lw.scope.values[name] = items[0]

    def operands(self) -> list:
        """The current values, for a branch to another block of the body."""
        result = []
        placeholders, types_ = iter(self.placeholders), iter(self.types)
        for name, arrays in zip(self.names, self.arrays):
            value = self.lw.scope.values.get(name)
            if isinstance(value, OptionalArraySlot):
                value = value.array
            items = value.items if isinstance(value, TupleValue) else [value] * len(arrays)
            for item in items:
                placeholder, ty = next(placeholders), next(types_)
                if item is None:
                    result.append(placeholder)
                    continue
                result.append(item.memref if item.memref.type == ty
                              else memref.CastOp(ty, item.memref).result)
        return result


def _identity_layout(ty: ir.MemRefType) -> ir.MemRefType:
    return ir.MemRefType.get(ty.shape, ty.element_type)
