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
other) is carried as its arrays, one block argument each, and a tuple of
arrays and scalars (a flag and two arrays) as its items. A `prange` body's
blocks carry the body's own such variables the same way (parallel/nest.py),
entered with a variable's array from before the loop where there is one; a
body variable read before its iteration assigns it is refused.
"""
from __future__ import annotations

from numba.core import ir as nir
from numba.core import types
from numba.core.analysis import compute_live_map, compute_use_defs
from numba.core.controlflow import CFGraph
from numba.parfors.parfor import Parfor

from .._mlir import ir, memref
from .build import const, const_index
from .casts import cast
from .errors import UnsupportedConstructError, user_name
from .types import is_optional_array, is_scalar, scalar_type, strided_memref_type
from .values import ArrayValue, OptionalArraySlot, OptionalValue, TupleValue


def _array_type(ty):
    """The array type of an array or Optional(array) variable, else None."""
    if isinstance(ty, types.Array):
        return ty
    return ty.type if is_optional_array(ty) else None


def _carried_types_of(ty) -> list:
    """The types a variable of type `ty` is carried as: its array, or the
    items of a tuple of arrays and scalars (at least one array; a flag and
    two arrays, as pynndescent returns); [] when it is not carried so."""
    if isinstance(ty, types.BaseTuple) and any(isinstance(t, types.Array) for t in ty.types) and \
            all(isinstance(t, types.Array) or is_scalar(t) for t in ty.types):
        return [types.unliteral(t) for t in ty.types]
    array = _array_type(ty)
    return [] if array is None else [array]


def _block_type(ty, loc) -> ir.Type:
    return strided_memref_type(ty, loc) if isinstance(ty, types.Array) else scalar_type(ty, loc)


def carried_arrays(blocks: dict, typemap) -> list[str]:
    """Names of the array variables of a region's blocks (the function body,
    or a loop body entered at its first label) that need carrying."""
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
    dominators = _cfg(blocks).dominators()
    roots = _array_roots(blocks)
    carried = []
    for name, labels in defs.items():
        if not _carried_types_of(typemap.get(name)):
            continue
        if roots.get(name) is not None:
            continue        # every assignment is the same array (`a += 1` in a branch)
        if len(labels) > 1 or any(labels[0] not in dominators.get(u, ()) for u in uses[name]):
            carried.append(name)
    return sorted(carried)


def refuse_values_of_earlier_iterations(blocks: dict, names: list[str]) -> None:
    """A loop body's array variable read before the body assigns it (`v`
    held before the loop or assigned by an earlier iteration, `if c: v = a[i]`
    in the body, then a read of `v`): run in order, an iteration reads what
    an earlier one assigned, which parallel iterations cannot give."""
    if not names:       # (most bodies: no liveness to compute)
        return
    uses_defs = compute_use_defs(blocks)
    live = compute_live_map(_cfg(blocks), blocks, uses_defs.usemap, uses_defs.defmap)
    early = set(names) & live[min(blocks)]
    for label in sorted(blocks):
        for stmt in blocks[label].body:
            used = [v.name for v in stmt.list_vars() if v.name in early]
            if used:
                raise UnsupportedConstructError(
                    f"the array variable '{user_name(used[0])}' of a prange body read where "
                    "an earlier iteration (or the code before the loop) may have assigned it",
                    stmt.loc)


def _cfg(blocks: dict) -> CFGraph:
    """The blocks' control-flow graph, entered at the first label; a jump
    out of them (a loop body's back edge to its header) is no edge."""
    cfg = CFGraph()
    for label in blocks:
        cfg.add_node(label)
    for label, block in blocks.items():
        # a loop body's last block may end without a terminator: it leaves the body
        for target in block.terminator.get_targets() if block.is_terminated else ():
            if target in blocks:
                cfg.add_edge(label, target)
    cfg.set_entry_point(min(blocks))
    cfg.process()
    return cfg


def _array_roots(blocks) -> dict:
    """Variable -> the array that every assignment of it is (through copies
    and in-place operators, which return their left operand), or None.

    Variables joined by copies and in-place operators form one class; the
    class holds one array when no member is assigned anything else and its
    members get at most one array from outside the class: an argument, a
    variable the blocks do not assign (a loop body's array from before the
    loop), or, where the copies form a cycle (Numba's loop-carried copies of
    an array reduction's accumulator in a body), what its first read sees."""
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
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        parent.setdefault(name, name)
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for target, from_ in sources.items():
        for source in from_:
            if source is not None and source[0] == "var":
                parent[find(target)] = find(source[1])
    outside: dict[str, set] = {}
    fresh = set()
    for name in list(parent) + list(sources):
        cls = find(name)
        outside.setdefault(cls, set())
        if name not in sources:
            outside[cls].add(("outside", name))
        for source in sources.get(name, ()):
            if source is None:
                fresh.add(cls)
            elif source[0] == "arg":
                outside[cls].add(source)
    roots: dict = {}
    for name in sources:
        cls = find(name)
        found = outside[cls]
        roots[name] = None if cls in fresh or len(found) > 1 else \
            next(iter(found), ("cycle", cls))
    return roots


class CarriedArrays:
    """The carried variables of one function and their block arguments."""

    def __init__(self, lw, names: list[str]):
        self.lw = lw
        self.names = names
        # per variable, the Numba types of its block arguments (flat, in order):
        # arrays, and the scalars of a tuple holding both
        self.items = [_carried_types_of(lw.typeof(n)) for n in names]
        self.types = [_block_type(t, lw.loc) for items in self.items for t in items]
        self.placeholders: list = []
        self.flags: dict = {}          # Optional(array) variable -> its flag's slot

    def make_placeholders(self) -> None:
        """Empty arrays for variables not assigned yet (in the entry block).
        In a loop body, a variable that holds an array before the body starts
        from that array instead."""
        flat = [t for per_name in self.items for t in per_name]
        for array, ty in zip(flat, self.types):
            if not isinstance(array, types.Array):
                self.placeholders.append(const(array, False if isinstance(
                    array, types.Boolean) else 0))
                continue
            plain = memref.AllocaOp(
                _identity_layout(ty), [const_index(0)] * array.ndim, []).result
            self.placeholders.append(memref.CastOp(ty, plain).result)
        for name in self.names:
            if is_optional_array(self.lw.typeof(name)):
                outside = self.lw.scope.find_value(name)
                if isinstance(outside, OptionalArraySlot):
                    valid = self.lw.load_slot(outside.valid, types.boolean)
                elif isinstance(outside, OptionalValue):
                    valid = outside.valid
                else:
                    valid = const(types.boolean, 0)
                self.flags[name] = flag = self.lw.new_slot(types.boolean)
                self.lw.store_slot(valid, flag, types.boolean)

    def initial_operands(self) -> list:
        """What the entry block passes to the region's first block: each
        variable's value from outside the region, else its placeholder."""
        return self._operands(self.lw.scope.find_value)

    def bind_block_arguments(self, block) -> None:
        arguments = iter(block.arguments)
        for name, wanted in zip(self.names, self.items):
            items = [ArrayValue(next(arguments), t, view=True) if isinstance(t, types.Array)
                     else next(arguments) for t in wanted]
            ty = self.lw.typeof(name)
            if isinstance(ty, types.BaseTuple):
                self.lw.scope.values[name] = TupleValue(items, ty)
            elif name in self.flags:
                self.lw.scope.values[name] = OptionalArraySlot(self.flags[name], items[0])
            else:
                self.lw.scope.values[name] = items[0]

    def operands(self) -> list:
        """The current values, for a branch to another block of the region."""
        return self._operands(self.lw.scope.values.get)

    def _operands(self, lookup) -> list:
        result = []
        placeholders, types_ = iter(self.placeholders), iter(self.types)
        for name, wanted in zip(self.names, self.items):
            value = lookup(name)
            if isinstance(value, (OptionalArraySlot, OptionalValue)):
                value = value.array if isinstance(value, OptionalArraySlot) else value.value
            if value is not None and not isinstance(value, (ArrayValue, TupleValue)):
                raise UnsupportedConstructError(
                    f"the variable '{user_name(name)}' holding {type(value).__name__} on one "
                    "path and an array on another", self.lw.loc)
            items = value.items if isinstance(value, TupleValue) else [value] * len(wanted)
            item_types = value.type.types if isinstance(value, TupleValue) else wanted
            for item, item_ty, want in zip(items, item_types, wanted):
                placeholder, ty = next(placeholders), next(types_)
                if item is None:
                    result.append(placeholder)
                elif not isinstance(want, types.Array):
                    result.append(cast(item, item_ty, want))
                else:
                    result.append(item.memref if item.memref.type == ty
                                  else memref.CastOp(ty, item.memref).result)
        return result


def _identity_layout(ty: ir.MemRefType) -> ir.MemRefType:
    return ir.MemRefType.get(ty.shape, ty.element_type)
