"""Read-modify-writes of one array element in Numba IR: `h[k] += v`.

Numba gives `h[idx] op= e` (and `h[idx] = op(h[idx], e)`) as three
statements, `$v = getitem(h, idx)`, `$r = op($v, e)`, `h[idx'] = $r`,
which must stay together to become one atomic update (scatter.py says
when one is needed). They are recognised in one block, with `$v` and `$r`
read nowhere else, `idx'` the same variable as `idx` or the same
computation with no memory write in between, and nothing in between
assigning what the update reads. Only operations whose final value does not
depend on the order of the updates qualify (for floats: up to rounding):
`+` (either side), `-` (the element first), `*`, `|`, `&`, `^`, `max`/`min`
(a float element first: Python's max keeps its first argument when the
other is NaN, so the order would decide), `np.maximum`/`np.minimum`.
"""
from __future__ import annotations

import operator
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np
from numba.core import ir as nir
from numba.core import types
from numba.parfors.parfor import Parfor

from ..lowering.indexing import ELEMENT, index_kind

_OPERATORS = {operator.iadd: operator.add, operator.add: operator.add,
              operator.isub: operator.sub, operator.sub: operator.sub,
              operator.imul: operator.mul, operator.mul: operator.mul,
              operator.ior: operator.or_, operator.or_: operator.or_,
              operator.iand: operator.and_, operator.and_: operator.and_,
              operator.ixor: operator.xor, operator.xor: operator.xor}
_CALLED = (max, min, np.maximum, np.minimum)


@dataclass
class Update:
    """`h[idx] = op(h[idx], e)`: its three statements and the operation."""
    read: nir.Assign            # $v = getitem(h, idx)
    operation: nir.Assign       # $r = op($v, e) or op(e, $v)
    store: nir.Stmt             # h[idx] = $r (SetItem or StaticSetItem)
    op: object                  # operator.add/sub/mul/or_/and_/xor, max, min, np.maximum/minimum
    old: str                    # $v
    operand: nir.Var            # e
    body: list                  # the statements of the block
    position: int               # the store's, in `body`

    @property
    def array(self) -> str:
        return self.store.target.name


def variable_uses(func_ir) -> Counter:
    """How many times each variable is read, in the whole function (parfor
    bodies included)."""
    uses: Counter = Counter()
    for block in func_ir.blocks.values():
        _count_uses(block.body, uses)
    return uses


def uses_in(stmts) -> Counter:
    """How many times each variable is read by `stmts` (parfor bodies included)."""
    uses: Counter = Counter()
    _count_uses(stmts, uses)
    return uses


def _count_uses(stmts, uses: Counter) -> None:
    for stmt in stmts:
        if isinstance(stmt, Parfor):
            for loop in stmt.loop_nests:
                uses.update(v.name for v in (loop.start, loop.stop, loop.step)
                            if isinstance(v, nir.Var))
            _count_uses(stmt.init_block.body, uses)
            for block in stmt.loop_body.values():
                _count_uses(block.body, uses)
        elif isinstance(stmt, nir.Assign):
            uses.update(v.name for v in read_vars(stmt.value))
        else:
            uses.update(v.name for v in stmt.list_vars())


def read_vars(value) -> list:
    if isinstance(value, nir.Var):
        return [value]
    if isinstance(value, nir.Expr):
        return value.list_vars()
    return []


def updates_in(lw, blocks: Iterable[nir.Block], uses: Counter) -> list[Update]:
    """The updates that the statements of `blocks` make."""
    found = []
    for block in blocks:
        for pos, stmt in enumerate(block.body):
            if isinstance(stmt, (nir.SetItem, nir.StaticSetItem)):
                update = _match(lw, block.body, pos, uses)
                if update is not None:
                    found.append(update)
    return found


def _match(lw, body: list, pos: int, uses: Counter) -> Optional[Update]:
    store = body[pos]
    result = store.value.name
    op_pos = _assignment_before(body, pos, result)
    if uses[result] != 1 or op_pos is None:
        return None
    operation = body[op_pos]
    found = _operation(lw, body, op_pos, operation.value)
    if found is None:
        return None
    op, args = found
    for old, operand in ((args[0], args[1]), (args[1], args[0])):
        read_pos = _assignment_before(body, op_pos, old.name)
        if read_pos is None or uses[old.name] != 1 or old.name == operand.name:
            continue
        read = body[read_pos]
        if not (_reads_element(lw, read, store) and _in_any_order(lw, op, old is args[0], args)):
            continue
        window = Window(lw, body, read_pos)
        if window.same_index(read.value, read_pos, store, pos) and window.quiet_until(pos) \
                and not _assigned_between(body, op_pos, pos, operand.name) \
                and not _assigned_between(body, read_pos, pos, store.target.name):
            return Update(read, operation, store, op, old.name, operand, body, pos)
    return None


def _operation(lw, body: list, pos: int, value) -> Optional[tuple]:
    """(the operator, its two operands) of a binary operator or a call of
    one of _CALLED, else None."""
    if not isinstance(value, nir.Expr):
        return None
    if value.op in ("binop", "inplace_binop"):
        op = _OPERATORS.get(value.fn)
        return (op, [value.lhs, value.rhs]) if op is not None else None
    if value.op == "call" and len(value.args) == 2 and not value.kws \
            and value.vararg is None and value.varkwarg is None:
        function = callee(lw, body, pos, value.func.name)
        if any(function is fn for fn in _CALLED):
            return function, list(value.args)
    return None


def callee(lw, body: list, pos: int, name: str):
    """The global function a call's variable holds (`max`, `np.maximum`)."""
    value = _definition(lw, body, pos, name)
    if isinstance(value, nir.Expr) and value.op == "getattr":
        module = _definition(lw, body, pos, value.value.name)
        if isinstance(module, (nir.Global, nir.FreeVar)):
            return getattr(module.value, value.attr, None)
        return None
    return value.value if isinstance(value, (nir.Global, nir.FreeVar)) else None


def _definition(lw, body: list, pos: int, name: str):
    found = _assignment_before(body, pos, name)
    if found is not None:
        return body[found].value
    defs = lw.func_ir._definitions.get(name, [])
    return defs[0] if len(defs) == 1 else None


def _reads_element(lw, read: nir.Assign, store) -> bool:
    """Is `read` one element of the stored array, of a type the atomics
    handle?"""
    value = read.value
    if not (isinstance(value, nir.Expr) and value.op in ("getitem", "static_getitem")
            and value.value.name == store.target.name):
        return False
    array_ty = lw.typeof(store.target.name)
    if not isinstance(array_ty, types.Array) or lw.typeof(read.target.name) != array_ty.dtype:
        return False
    index_ty = lw.typeof(store.index.name) if isinstance(store, nir.SetItem) else (
        lw.typeof(store.index_var.name) if store.index_var is not None else None)
    if index_ty is not None and index_kind(index_ty, array_ty.ndim) != ELEMENT:
        return False
    # complex elements are recognised so that scatter.py can refuse them
    return isinstance(array_ty.dtype, (types.Integer, types.Float, types.Boolean, types.Complex))


def _in_any_order(lw, op, old_first: bool, args: list) -> bool:
    """Does the final value not depend on the order of the updates?"""
    arg_types = [types.unliteral(lw.typeof(a.name)) for a in args]
    if not all(isinstance(t, (types.Integer, types.Float, types.Boolean, types.Complex))
               for t in arg_types):
        return False
    if op is operator.sub:
        return old_first                    # h[k] - v, not v - h[k]
    if op is max or op is min:
        # Python's max/min keep the first argument when the other is NaN
        return old_first or not any(isinstance(t, types.Float) for t in arg_types)
    return True


def _assignment_before(body: list, pos: int, name: str) -> Optional[int]:
    """The position of the last assignment to `name` before `pos`."""
    for at in range(pos - 1, -1, -1):
        stmt = body[at]
        if isinstance(stmt, nir.Assign) and stmt.target.name == name:
            return at
    return None


def _assigned_between(body: list, start: int, end: int, name: str) -> bool:
    return any(isinstance(stmt, nir.Assign) and stmt.target.name == name
               for stmt in body[start + 1:end])


class Window:
    """Statements of a block, from a start that the keys computed move back
    to the earliest definition they expand (the window an update's index
    must be computed in without memory writes)."""

    def __init__(self, lw, body: list, start: int):
        self.lw, self.body, self.start = lw, body, start

    def same_index(self, read, read_pos: int, store, store_pos: int) -> bool:
        """Do the read and the store index the same element? The same
        variable, or two computations of the same value."""
        names = [store.index if isinstance(store, nir.SetItem) else store.index_var,
                 read.index if read.op == "getitem" else read.index_var]
        if all(isinstance(n, nir.Var) for n in names) and \
                self.source(names[0].name, store_pos) == self.source(names[1].name, read_pos):
            return True
        return self.index(store, store_pos) == self.index(read, read_pos)

    def index(self, access, pos: int):
        """The key of the index of a getitem or static_getitem expression,
        or of a SetItem or StaticSetItem statement, at `pos`."""
        if isinstance(access, nir.SetItem) or getattr(access, "op", None) == "getitem":
            return self.key(access.index.name, pos)
        return self.static_key(access.index, access.index_var, pos)

    def source(self, name: str, pos: int):
        """The assignment `name` holds at `pos`, through copies."""
        at = _assignment_before(self.body, pos, name)
        if at is None:
            return name
        value = self.body[at].value
        return self.source(value.name, at) if isinstance(value, nir.Var) else at

    def static_key(self, index, index_var, pos: int):
        if isinstance(index, int):
            return ("const", index)
        if isinstance(index, tuple) and all(isinstance(i, int) for i in index):
            return ("tuple", tuple(("const", i) for i in index))
        return self.key(index_var.name, pos) if index_var is not None else ("opaque", id(index))

    def key(self, name: str, pos: int):
        """What `name` holds at `pos`, structurally: equal keys, equal
        values (while nothing in the window writes memory)."""
        at = _assignment_before(self.body, pos, name)
        if at is None:
            return ("var", name)            # unchanged in this block
        self.start = min(self.start, at)
        value = self.body[at].value
        if isinstance(value, nir.Var):
            return self.key(value.name, at)
        if isinstance(value, nir.Const) and isinstance(value.value, (int, float, bool)):
            return ("const", value.value)
        if isinstance(value, nir.Expr):
            if value.op == "build_tuple":
                return ("tuple", tuple(self.key(item.name, at) for item in value.items))
            if value.op == "getitem":
                return ("getitem", self.key(value.value.name, at), self.key(value.index.name, at))
            if value.op == "static_getitem":
                return ("getitem", self.key(value.value.name, at),
                        self.static_key(value.index, value.index_var, at))
            if value.op == "binop":
                return ("binop", value.fn, self.key(value.lhs.name, at),
                        self.key(value.rhs.name, at))
            if value.op == "unary":
                return ("unary", value.fn, self.key(value.value.name, at))
            if value.op == "cast":
                return ("cast", self.key(value.value.name, at))
        return ("definition", at)

    def quiet_until(self, end: int) -> bool:
        """Does nothing between the window's start and `end` write memory?"""
        return not any(_may_write_memory(self.lw, stmt) for stmt in self.body[self.start:end])


def _may_write_memory(lw, stmt) -> bool:
    if isinstance(stmt, Parfor):       # a reduction (`row.sum()`) writes nothing
        blocks = [stmt.init_block] + list(stmt.loop_body.values())
        return any(_may_write_memory(lw, inner) for block in blocks for inner in block.body)
    if isinstance(stmt, (nir.SetItem, nir.StaticSetItem, nir.DelItem)):
        return True
    if isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Expr):
        # a call may write the arrays it is given, an in-place operator its
        # array operand
        value = stmt.value
        if value.op == "call":
            return any(isinstance(lw.typeof(v.name), types.Array) for v in value.args)
        if value.op == "inplace_binop":
            return isinstance(lw.typeof(value.lhs.name), types.Array)
    return False
