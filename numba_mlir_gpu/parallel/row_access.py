"""Which elements of the current row the inner loops of a prange body read
and write: the plan of the GPU's row cache (targets/gpu/row_cache.py).

A row softmax reads `x[i, j]` in three inner loops (its maximum, its sum,
its output) and writes then rereads `out[i, j]`. Where a block's threads
share each iteration of the prange, element j of every inner loop can go to
the same thread (j mod threads), which then keeps it in a register from the
first loop that touches it to the last: the row crosses the memory bus once.
That is correct when every write to a cached array in the body has the
same form `a[i, j]` (i the prange's index, j the index of the inner loop it
is in), and no other array written in the body shares its memory (the host
checks the spans before the launch).

The plan is static and conservative: a body that makes or views arrays, or
passes arrays to calls, has none; nor does one whose inner loops nest
further parallel loops, step by other than 1, or start or stop at values
the host cannot compute before the loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from numba.core import ir as nir
from numba.core import types
from numba.parfors.parfor import Parfor

from .nest import carries_values


@dataclass
class RowAccessPlan:
    index: str                                  # the prange's index variable
    loops: dict = field(default_factory=dict)   # inner index variable -> nested Parfor
    cached: dict = field(default_factory=dict)  # array variable -> types.Array
    loads: dict = field(default_factory=dict)   # id(Assign of a getitem) -> array variable
    stores: dict = field(default_factory=dict)  # id(SetItem) -> array variable
    written: set = field(default_factory=set)   # array variables written in the body

    def others_written(self, name: str) -> list:
        """Arrays written in the body whose memory must not meet `name`'s."""
        return sorted(w for w in self.written if w != name)


def row_access_plan(lw, parfor: Parfor, nested: list) -> Optional[RowAccessPlan]:
    """The plan for `parfor`'s body, whose top-level nested parfors are
    `nested`; None when nothing is worth caching or safe to."""
    if len(parfor.loop_nests) != 1 or not nested:
        return None
    plan = RowAccessPlan(parfor.loop_nests[0].index_variable.name)
    body = _Statements(parfor)
    for loop in nested:
        if len(loop.loop_nests) != 1 or not _steps_by_one(body, loop.loop_nests[0].step):
            return None
        if not loop._kws.get("inner_reductions") and carries_values(loop):
            return None         # run in order by every thread (parfors._lower_nested)
        plan.loops[loop.loop_nests[0].index_variable.name] = loop
    in_form: dict = {}          # array -> inner loops where it is accessed as a[i, j]
    out_of_form_writes = set()
    for stmt, loop in body.statements():
        if loop is None and isinstance(stmt, Parfor):
            continue
        if isinstance(stmt, Parfor) or _passes_arrays(lw, stmt) or _makes_array(lw, stmt):
            return None
        access = _element_access(lw, stmt)
        if access is None:
            continue
        array, index, writes = access
        if array in body.defined:
            return None
        if writes:
            plan.written.add(array)
        j = loop.loop_nests[0].index_variable.name if loop is not None else None
        if j is not None and index is not None and body.is_pair(index, plan.index, j) and \
                _cacheable(lw.typeof(array)):
            in_form.setdefault(array, set()).add(j)
            (plan.stores if writes else plan.loads)[id(stmt)] = array
        elif writes:
            out_of_form_writes.add(array)
    for array, loops in in_form.items():
        if len(loops) >= 2 and array not in out_of_form_writes:
            plan.cached[array] = lw.typeof(array)
    if not plan.cached:
        return None
    plan.loads = {k: a for k, a in plan.loads.items() if a in plan.cached}
    plan.stores = {k: a for k, a in plan.stores.items() if a in plan.cached}
    return plan


class _Statements:
    """The body's statements with the nested parfor each is in, and what the
    body defines."""

    def __init__(self, parfor: Parfor):
        self.parfor = parfor
        self.definitions: dict = {}
        for stmt, _ in self.statements():
            if isinstance(stmt, nir.Assign):
                self.definitions.setdefault(stmt.target.name, []).append(stmt.value)
        self.defined = set(self.definitions)

    def statements(self):
        for block in self.parfor.loop_body.values():
            for stmt in block.body:
                yield stmt, None
                if isinstance(stmt, Parfor):
                    for inner in [stmt.init_block, *stmt.loop_body.values()]:
                        for s in inner.body:
                            yield s, stmt

    def single(self, name: str):
        values = self.definitions.get(name, [])
        return values[0] if len(values) == 1 else None

    def resolves_to(self, name: str, wanted: str) -> bool:
        """Is `name` `wanted` or a chain of plain copies of it?"""
        for _ in range(8):
            if name == wanted:
                return True
            value = self.single(name)
            if not isinstance(value, nir.Var):
                return False
            name = value.name
        return False

    def is_pair(self, index: str, i: str, j: str) -> bool:
        """Is the index variable `index` the tuple (i, j)?"""
        value = self.single(index)
        return isinstance(value, nir.Expr) and value.op == "build_tuple" and \
            len(value.items) == 2 and self.resolves_to(value.items[0].name, i) and \
            self.resolves_to(value.items[1].name, j)


def _steps_by_one(body: _Statements, step) -> bool:
    if isinstance(step, int):
        return step == 1
    value = body.single(step.name) if isinstance(step, nir.Var) else None
    return isinstance(value, nir.Const) and value.value == 1


def _cacheable(ty) -> bool:
    ty = types.unliteral(ty)
    return isinstance(ty, types.Array) and ty.ndim == 2 and \
        isinstance(ty.dtype, (types.Integer, types.Float))


def _is_array(lw, name: str) -> bool:
    return isinstance(types.unliteral(lw.typeof(name)), types.Array)


def _element_access(lw, stmt):
    """(array, index variable or None, writes) of an item read or write."""
    if isinstance(stmt, (nir.SetItem, nir.StaticSetItem)) and _is_array(lw, stmt.target.name):
        index = stmt.index.name if isinstance(stmt, nir.SetItem) else None
        return stmt.target.name, index, True
    if isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Expr) and \
            stmt.value.op in ("getitem", "static_getitem") and _is_array(lw, stmt.value.value.name):
        index = stmt.value.index.name if stmt.value.op == "getitem" else None
        return stmt.value.value.name, index, False
    return None


def _passes_arrays(lw, stmt) -> bool:
    """A call or an in-place operator given an array (it may write it)."""
    if not (isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Expr)):
        return False
    expr = stmt.value
    if expr.op == "call":
        return any(_is_array(lw, v.name) for v in list(expr.args) + [v for _, v in expr.kws])
    if expr.op == "inplace_binop":
        return _is_array(lw, expr.lhs.name)
    return False


def _makes_array(lw, stmt) -> bool:
    """A statement that binds an array (a view or a new one) in the body."""
    return isinstance(stmt, nir.Assign) and _is_array(lw, stmt.target.name)
