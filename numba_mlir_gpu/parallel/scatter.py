"""Scatter updates in a parfor body: `h[k] += v`, where two iterations may
update the same element (a histogram: `counts[keys[i]] += 1`).

Iterations run at the same time (CPU tasks, GPU threads), so a separate
load and store of such an element loses updates. Each update becomes one
atomic read-modify-write of the element (lowering/atomics.py); its load and
operation statements are not lowered on their own. Only updates whose
result does not depend on the order of the iterations qualify (for floats:
up to rounding): `+=`, `-=`, `*=`, `|=`, `&=`, `^=`, `h[k] = max(h[k], v)`
and `min`, `np.maximum`, `np.minimum`, also written `h[k] = v + h[k]`. (A
float `max(v, h[k])` is not one: Python's max keeps its first argument when
the other is NaN, so the order would decide.)

What stays a plain load and store: an update whose element no two
iterations can share, because for each parfor around it (the outermost and
every nested one down to the update)
* the index holds that parfor's index variables unchanged (or copies of
  them): the index itself in a 1-d loop, each at some position of the index
  tuple (`out[i] += x[i]`; `out[i, j] += 1` in a 2-d loop, or in a loop over
  j inside one over i); iterations with different indices then write
  elements that differ at that position, whatever the other positions hold;
* or the array is the iteration's own: made in that parfor's body (`tmp =
  np.zeros(m)`, Numba's temporaries of array expressions) or a view taken
  there with such an index (`row = x[i]`).
Anything else is atomic: an index read from the data, `i // 2`, a constant,
`out[j]` in a loop over j inside a prange over i. As for Numba's own
prange, indices are taken not to wrap onto each other (an index `i` of
`prange(-n, n)` over n elements).

The update is recognised in Numba's IR as `$v = getitem(h, idx)`, `$r =
op($v, e)` (binop, inplace_binop, or a call of max/min/np.maximum/
np.minimum), `h[idx'] = $r`, in one block, with `$v` and `$r` used only
there, `idx'` computing the same value as `idx`, and nothing in between
writing memory or assigning what the update reads.
"""
from __future__ import annotations

import contextlib
import operator
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np
from numba.core import ir as nir
from numba.core import types
from numba.core.typing import signature
from numba.parfors.parfor import Parfor

from .._mlir import arith
from ..lowering.atomics import atomic_rmw, update_atomically
from ..lowering.build import const
from ..lowering.casts import cast
from ..lowering.indexing import ELEMENT, element_indices, index_kind, static_index
from ..lowering.values import ArrayValue

_OPERATORS = {operator.iadd: operator.add, operator.add: operator.add,
              operator.isub: operator.sub, operator.sub: operator.sub,
              operator.imul: operator.mul, operator.mul: operator.mul,
              operator.ior: operator.or_, operator.or_: operator.or_,
              operator.iand: operator.and_, operator.and_: operator.and_,
              operator.ixor: operator.xor, operator.xor: operator.xor}
_CALLED = (max, min, np.maximum, np.minimum)
_ALLOCATORS = (np.empty, np.zeros, np.ones, np.full, np.empty_like, np.zeros_like,
               np.ones_like, np.full_like, np.copy, np.array)
# memref.atomic_rmw kinds that compute an integer update exactly
_INTEGER_KINDS = {operator.add: "addi", operator.sub: "addi", operator.or_: "ori",
                  operator.and_: "andi", operator.xor: "xori"}
_EXTREMA = {max: "max", np.maximum: "max", min: "min", np.minimum: "min"}


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


# -- recognising updates ------------------------------------------------------

def variable_uses(func_ir) -> Counter:
    """How many times each variable is read, in the whole function (parfor
    bodies included)."""
    uses: Counter = Counter()
    for block in func_ir.blocks.values():
        _count_uses(block.body, uses)
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
            uses.update(v.name for v in _read_vars(stmt.value))
        else:
            uses.update(v.name for v in stmt.list_vars())


def _read_vars(value) -> list:
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
        window = _Window(lw, body, read_pos)
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
        callee = _callee(lw, body, pos, value.func.name)
        if any(callee is fn for fn in _CALLED):
            return callee, list(value.args)
    return None


def _callee(lw, body: list, pos: int, name: str):
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
    return isinstance(array_ty.dtype, (types.Integer, types.Float, types.Boolean))


def _in_any_order(lw, op, old_first: bool, args: list) -> bool:
    """Does the final value not depend on the order of the updates?"""
    arg_types = [types.unliteral(lw.typeof(a.name)) for a in args]
    if not all(isinstance(t, (types.Integer, types.Float, types.Boolean)) for t in arg_types):
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


class _Window:
    """The statements of a block from the update's read (or the earliest
    definition its index needs) to its store."""

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
        if isinstance(store, nir.SetItem):
            stored = self.key(store.index.name, store_pos)
        else:
            stored = self.static_key(store.index, store.index_var, store_pos)
        if read.op == "getitem":
            loaded = self.key(read.index.name, read_pos)
        else:
            loaded = self.static_key(read.index, read.index_var, read_pos)
        return stored == loaded

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


# -- which updates need an atomic ----------------------------------------------

@dataclass
class _Level:
    """One parfor around an update."""
    indices: list[str]          # its loop variables
    assigned: dict              # name -> [(body, position)] of its assignments in the body


def atomic_updates(lw, parfor: Parfor) -> list[Update]:
    """The updates in `parfor`'s body (nested parfors' too) whose element
    two iterations may share."""
    uses = variable_uses(lw.func_ir)
    copies = _index_copies(parfor)
    found = []

    def walk(level_parfor: Parfor, levels: list) -> None:
        levels = levels + [_Level([n.index_variable.name for n in level_parfor.loop_nests],
                                  _assignments(level_parfor.loop_body.values()))]
        nested = [stmt for block in level_parfor.loop_body.values() for stmt in block.body
                  if isinstance(stmt, Parfor)]
        blocks = list(level_parfor.loop_body.values()) + [p.init_block for p in nested]
        for update in updates_in(lw, blocks, uses):
            if not _disjoint(lw, update, levels, copies):
                found.append(update)
        for inner in nested:
            walk(inner, levels)
    walk(parfor, [])
    return found


def _assignments(blocks) -> dict:
    found: dict = {}
    for block in blocks:
        for pos, stmt in enumerate(block.body):
            if isinstance(stmt, Parfor):
                inner = _assignments([stmt.init_block] + list(stmt.loop_body.values()))
                for name, places in inner.items():
                    found.setdefault(name, []).extend(places)
            elif isinstance(stmt, nir.Assign):
                found.setdefault(stmt.target.name, []).append((block.body, pos))
    return found


def _index_copies(parfor: Parfor) -> dict:
    """name -> the loop variable it holds, for the loop variables of the
    parfor and its nested parfors and the variables only ever assigned a
    copy of one."""
    loops, work = [parfor], []
    while loops:
        current = loops.pop()
        work += [n.index_variable.name for n in current.loop_nests]
        loops += [stmt for block in current.loop_body.values() for stmt in block.body
                  if isinstance(stmt, Parfor)]
    copies = {name: name for name in work}
    assigned = _assignments(parfor.loop_body.values())
    changed = True
    while changed:
        changed = False
        for name, places in assigned.items():
            if name in copies:
                continue
            sources = {body[pos].value.name if isinstance(body[pos].value, nir.Var) else None
                       for body, pos in places}
            if len(sources) == 1 and None not in sources:
                source = copies.get(sources.pop())
                if source is not None:
                    copies[name] = source
                    changed = True
    return copies


def _disjoint(lw, update: Update, levels: list, copies: dict) -> bool:
    """Can no two iterations of any of `levels` share the update's element?"""
    store, pos = update.store, update.position
    window = _Window(lw, update.body, pos)
    if isinstance(store, nir.SetItem):
        key = window.key(store.index.name, pos)
    else:
        key = window.static_key(store.index, store.index_var, pos)
    key = _built_elsewhere(key, levels[0].assigned)
    return all(_covers(key, level, copies) or _own_array(lw, update.array, level, copies)
               for level in levels)


def _built_elsewhere(key, assigned: dict):
    """The items of an index tuple built once in the body, in another block
    (Numba's index tuple of a multi-dimensional loop), else `key`."""
    places = assigned.get(key[1], []) if key[0] == "var" else []
    if len(places) == 1:
        body, pos = places[0]
        value = body[pos].value
        if isinstance(value, nir.Expr) and value.op == "build_tuple":
            return ("tuple", tuple(("var", item.name) for item in value.items))
    return key


def _covers(key, level: _Level, copies: dict) -> bool:
    """Does the index `key` hold each loop variable of `level`?"""
    items = key[1] if key[0] == "tuple" else (key,)
    held = {copies.get(item[1]) for item in items if item[0] == "var"}
    return all(index in held for index in level.indices)


def _own_array(lw, name: str, level: _Level, copies: dict) -> bool:
    """Is the array `name` made anew in each iteration of `level` (an
    allocation in its body, or a view taken there that covers the level)?"""
    places = level.assigned.get(name, [])
    if len(places) != 1:
        return False
    body, pos = places[0]
    value = body[pos].value
    if isinstance(value, nir.Var):
        return _own_array(lw, value.name, level, copies)
    if not isinstance(value, nir.Expr):
        return False
    if value.op in ("getitem", "static_getitem"):
        window = _Window(lw, body, pos)
        key = window.key(value.index.name, pos) if value.op == "getitem" else \
            window.static_key(value.index, value.index_var, pos)
        return _covers(key, level, copies) or _own_array(lw, value.value.name, level, copies)
    if value.op in ("arrayexpr", "binop", "unary"):
        return True                         # a new array
    if value.op == "call":
        callee = _callee(lw, body, pos, value.func.name)
        return any(callee is fn for fn in _ALLOCATORS)
    return False


# -- lowering -----------------------------------------------------------------

@contextlib.contextmanager
def atomic_statements(lw, updates: list[Update]):
    """While lowering the parfor: each update's store is an atomic
    read-modify-write, and its read and operation are not lowered."""
    replaced = lw.replaced_statements
    for update in updates:
        replaced[id(update.read)] = replaced[id(update.operation)] = _skip
        replaced[id(update.store)] = lambda lw, stmt, update=update: lower_update(lw, update)
    try:
        yield
    finally:
        for update in updates:
            for stmt in (update.read, update.operation, update.store):
                replaced.pop(id(stmt), None)


def _skip(lw, stmt) -> None:
    """Part of an atomic update, lowered with its store."""


def lower_update(lw, update: Update) -> None:
    cooperation = lw.cooperation
    if cooperation is not None and cooperation.free:
        # every thread of the block runs this statement: one updates
        cooperation.single(lambda: _atomic(lw, update), lw)
    else:
        _atomic(lw, update)


def _atomic(lw, update: Update) -> None:
    store = update.store
    array = lw.read(store.target)
    assert isinstance(array, ArrayValue)
    lw.target.check_element_access(lw, array, store.loc)
    if isinstance(store, nir.SetItem):
        index, index_ty = lw.read(store.index), lw.typeof(store.index.name)
    else:
        index, index_ty = static_index(lw, store.index, store.index_var)
    indices = element_indices(lw, array, index, index_ty, store.loc)
    operand = lw.read(update.operand)
    native = _native(lw, update, operand, array.type.dtype)
    if native is not None:
        atomic_rmw(*native, array, indices)
    else:
        update_atomically(lw.mlower.module, array, indices, lambda old: _new_value(lw, update, old, operand,
                                                                array.type.dtype))


def _native(lw, update: Update, operand, dtype) -> Optional[tuple]:
    """(atomic_rmw kind, value) when one computes exactly what Numba does,
    else None (a compare-and-swap loop)."""
    expr = update.operation.value
    sig = _signature(lw, expr)
    if len(sig.args) != 2:
        return None
    result_ty = types.unliteral(lw.typeof(update.operation.target.name))
    operand_ty = types.unliteral(sig.args[_operands(expr).index(update.operand)])
    kind = _native_kind(update.op, dtype, result_ty, [types.unliteral(t) for t in sig.args])
    if kind is None:
        return None
    value = cast(cast(operand, lw.typeof(update.operand.name), operand_ty), operand_ty, dtype)
    if update.op is operator.sub:
        # x - y is x + (-y): modulo 2**n, and exactly in IEEE arithmetic
        value = arith.SubIOp(const(dtype, 0), value).result if kind == "addi" else \
            arith.NegFOp(value).result
    return kind, value


def _native_kind(op, dtype, result_ty, arg_types: list) -> Optional[str]:
    same = result_ty == dtype and all(t == dtype for t in arg_types)
    if isinstance(dtype, types.Integer) and op in _INTEGER_KINDS:
        # modular arithmetic and bitwise operations commute with truncation:
        # computed in a type at least as wide, then stored, or in the element type
        wide = all(isinstance(t, types.Integer) and t.bitwidth >= dtype.bitwidth
                   for t in [result_ty] + arg_types)
        return _INTEGER_KINDS[op] if wide else None
    if isinstance(dtype, types.Integer) and op in _EXTREMA and same:
        return _EXTREMA[op] + ("s" if dtype.signed else "u")
    if isinstance(dtype, types.Float) and op in (operator.add, operator.sub) and same:
        return "addf"
    if isinstance(dtype, types.Boolean) and op in (operator.or_, operator.and_, operator.xor) \
            and same:
        return _INTEGER_KINDS[op]
    return None


def _signature(lw, expr):
    """The operation's signature, with max(a, b)'s star tuple spread (as
    lowering/expressions.py does)."""
    sig = lw.calltypes[expr]
    if expr.op == "call" and len(sig.args) == 1 and isinstance(sig.args[0], types.BaseTuple):
        sig = signature(sig.return_type, *sig.args[0].types)
    return sig


def _operands(expr) -> list:
    return [expr.lhs, expr.rhs] if expr.op in ("binop", "inplace_binop") else list(expr.args)


def _new_value(lw, update: Update, old, operand, dtype):
    """What the operation statement computes from the element's current
    value, as the element type (the compare-and-swap loop's update)."""
    expr = update.operation.value
    sig = _signature(lw, expr)
    known = {update.old: (old, dtype),
             update.operand.name: (operand, lw.typeof(update.operand.name))}
    args = [cast(*known[var.name], ty) for var, ty in zip(_operands(expr), sig.args)]
    if expr.op == "call":
        result = lw.call(lw.read(expr.func), args, sig, expr)
    else:
        fn = expr.immutable_fn if expr.op == "inplace_binop" else expr.fn
        result = lw.binop(fn, args[0], args[1], sig, expr)
    result_ty = lw.typeof(update.operation.target.name)
    return cast(cast(result, sig.return_type, result_ty), result_ty, dtype)
