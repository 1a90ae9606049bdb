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
flag lives in a slot, as a scalar does.
"""
from __future__ import annotations

from numba.core import ir as nir
from numba.core import types
from numba.core.analysis import compute_cfg_from_blocks
from numba.parfors.parfor import Parfor

from .._mlir import ir, memref
from .build import const, const_index
from .types import is_optional_array, strided_memref_type
from .values import ArrayValue, OptionalArraySlot


def _array_type(ty):
    """The array type of an array or Optional(array) variable, else None."""
    if isinstance(ty, types.Array):
        return ty
    return ty.type if is_optional_array(ty) else None


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
        if _array_type(typemap.get(name)) is None:
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
        self.types = [strided_memref_type(_array_type(lw.typeof(n)), lw.loc) for n in names]
        self.placeholders: list = []
        self.flags: dict = {}          # Optional(array) variable -> its flag's slot

    def make_placeholders(self) -> None:
        """Empty arrays for variables not assigned yet (in the entry block)."""
        for name, ty in zip(self.names, self.types):
            ndim = _array_type(self.lw.typeof(name)).ndim
            plain = memref.AllocaOp(
                _identity_layout(ty), [const_index(0)] * ndim, []).result
            self.placeholders.append(memref.CastOp(ty, plain).result)
            if is_optional_array(self.lw.typeof(name)):
                self.flags[name] = flag = self.lw.new_slot(types.boolean)
                self.lw.store_slot(const(types.boolean, 0), flag, types.boolean)

    def bind_block_arguments(self, block) -> None:
        for i, name in enumerate(self.names):
            ty = self.lw.typeof(name)
            array = ArrayValue(block.arguments[i], _array_type(ty), view=True)
            self.lw.scope.values[name] = OptionalArraySlot(self.flags[name], array) \
                if name in self.flags else array

    def operands(self) -> list:
        """The current values, for a branch to another block of the body."""
        result = []
        for i, (name, ty) in enumerate(zip(self.names, self.types)):
            value = self.lw.scope.values.get(name)
            if value is None:
                result.append(self.placeholders[i])
                continue
            if isinstance(value, OptionalArraySlot):
                value = value.array
            result.append(value.memref if value.memref.type == ty
                          else memref.CastOp(ty, value.memref).result)
        return result


def _identity_layout(ty: ir.MemRefType) -> ir.MemRefType:
    return ir.MemRefType.get(ty.shape, ty.element_type)
