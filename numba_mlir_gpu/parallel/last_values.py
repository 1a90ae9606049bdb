"""Scalars a prange body assigns and code after the loop reads: they keep
the value of the last iteration (in serial order) that assigns them, as the
serial loop leaves them (OpenMP's lastprivate).

Numba's parallel=True leaves such a variable to whichever worker stores last
(it warns of its `races`) or, where its SSA versions hide the carry, to the
value before the loop. Here each variable travels with a hidden position:
the iteration that last gave it a value, -1 for the value before the loop.
An iteration that does not assign it passes the carried value and position
through; partial results combine by keeping the later position, an
associative reduction like the others (`LastValue`).

Refused: a body that reads the carried value for anything but passing it on
(`x = 2 * x + a[i]`, not a reduction Numba recognises: iteration i needs
iteration i - 1's result), and variables that are not scalars.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from numba.core import ir as nir
from numba.core import types
from numba.parfors.parfor import Parfor

from .._mlir import arith
from ..lowering.build import cmpi, const, const_i64, select, to_i64
from ..lowering.errors import UnsupportedConstructError, user_name
from ..lowering.registry import stmt_rules
from ..lowering.types import is_scalar
from .races import nest_blocks
from .updates import read_vars, uses_in, variable_uses

# the hidden variable holding the iteration being run, in serial order
ITERATION = "$iteration"


@dataclass
class LastValue:
    """`names`: the variable and its hidden position (see the module);
    `copies`: the assignments in the nest to the variable and its copies."""
    names: list
    types: list
    copies: dict                # member -> its Assign statements
    initial: list = None        # the value before the loop and -1

    def identity_values(self) -> list:
        return list(self.initial)

    def values_before(self) -> list:
        return list(self.initial)

    def combine_values(self, a: list, b: list) -> list:
        later = cmpi("sgt", b[1], a[1])
        return [select(later, y, x) for x, y in zip(a, b)]


def position_of(name: str) -> str:
    return f"{name}$last"


def read_outside(lw, parfor: Parfor) -> set:
    """The variables code outside `parfor` (as Numba made it, before our
    rewrites of its body) reads."""
    outside = variable_uses(lw.func_ir) - uses_in([parfor])
    return {name for name, count in outside.items() if count > 0}


def last_values(lw, parfor: Parfor, outside: set) -> list[LastValue]:
    """The LastValue of each scalar `parfor`'s nest assigns and code
    outside it reads (`outside`; the hidden names typed in `lw.typemap`);
    raises UnsupportedConstructError for the cases the module refuses."""
    blocks = nest_blocks(parfor)
    assigned = _assignments(blocks)
    excluded = set(parfor.redvars) | {n.index_variable.name for n in parfor.loop_nests}
    result = []
    for name in sorted(set(assigned) & outside - excluded):
        ty = types.unliteral(lw.typeof(name))
        if not is_scalar(ty):
            raise UnsupportedConstructError(
                f"reading variable '{user_name(name)}' ({ty}) after the prange loop that "
                "assigns it (supported for scalars, which keep the last iteration's value)",
                parfor.loc)
        members = _copies(name, assigned)
        _check_passed_through(name, members, parfor, blocks)
        lw.typemap[position_of(name)] = types.int64
        result.append(LastValue([name, position_of(name)], [ty, types.int64],
                                {member: assigned.get(member, []) for member in members}))
    return result


def _assignments(blocks: list) -> dict:
    assigned = {}
    for block in blocks:
        for stmt in block.body:
            if isinstance(stmt, nir.Assign):
                assigned.setdefault(stmt.target.name, []).append(stmt)
    return assigned


def _copies(name: str, assigned: dict) -> set:
    """`name` and the variables of the nest connected to it by copies
    (`a = b`, both assigned in the nest): SSA versions of one variable."""
    members, changed = {name}, True
    while changed:
        changed = False
        for target, stmts in assigned.items():
            for stmt in stmts:
                if isinstance(stmt.value, nir.Var) and stmt.value.name in assigned and \
                        (target in members) != (stmt.value.name in members):
                    members |= {target, stmt.value.name}
                    changed = True
    return members


def _check_passed_through(name: str, members: set, parfor: Parfor, blocks: list) -> None:
    """The carried value (of `name`, if the body reads it before assigning
    it) may only be copied between the members."""
    live_in = members & set(getattr(parfor, "params", ()) or ())
    if not live_in:
        return
    carried, changed = set(live_in), True
    while changed:
        changed = False
        for block in blocks:
            for stmt in block.body:
                if isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Var) and \
                        stmt.value.name in carried and stmt.target.name not in carried:
                    carried.add(stmt.target.name)
                    changed = True
    for block in blocks:
        for stmt in block.body:
            if isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Var) and \
                    stmt.target.name in members:
                continue
            if isinstance(stmt, Parfor):
                continue        # its blocks are among `blocks`
            read = read_vars(stmt.value) if isinstance(stmt, nir.Assign) else stmt.list_vars()
            if any(v.name in carried for v in read):
                raise UnsupportedConstructError(
                    f"a prange body that reads the value that variable '{user_name(name)}' had in "
                    "the previous iteration (each iteration would need the one before it; "
                    "only reductions such as `s += x` or `s = max(s, x)` may carry values "
                    "between iterations)", stmt.loc)


@contextmanager
def positions_marked(lw, last: list[LastValue]):
    """While the body lowers: each assignment to a copy of a LastValue's
    variable also sets the copy's hidden position (the iteration for a new
    value, the source's position for a copy)."""
    marked = {}
    for value in last:
        members = value.copies
        for member, stmts in members.items():
            lw.typemap.setdefault(position_of(member), types.int64)
            for stmt in stmts:
                copy = isinstance(stmt.value, nir.Var) and stmt.value.name in members
                marked[id(stmt)] = _marking(lw, stmt, position_of(member),
                                            position_of(stmt.value.name) if copy else ITERATION)
    lw.typemap.setdefault(ITERATION, types.int64)
    replaced = lw.replaced_statements
    saved = {key: replaced.get(key) for key in marked}
    replaced.update(marked)
    try:
        yield
    finally:
        for key, rule in saved.items():
            if rule is None:
                replaced.pop(key, None)
            else:
                replaced[key] = rule


def _marking(lw, stmt, position: str, source: str):
    lower = lw.replaced_statements.get(id(stmt)) or stmt_rules.get(type(stmt))

    def rule(lw, stmt):
        lower(lw, stmt)
        lw.write(position, lw.read(nir.Var(None, source, stmt.loc)))
    return rule


def initial_values(lw, last: LastValue, loc) -> list:
    """The variable's value before the loop (zero where it has none yet:
    no iteration may assign it, and Numba then reads an undefined value)
    and position -1."""
    name, ty = last.names[0], last.types[0]
    if lw.scope.find_slot(name) is None and lw.scope.find_value(name) is None:
        value = const(ty, 0)
    else:
        value = lw.read_as(nir.Var(None, name, loc), ty)
    return [value, const_i64(-1)]


def linear_iteration(counters: list, trips: list):
    """The serial position (i64) of the iteration with zero-based `counters`
    in a nest of `trips`, outermost first."""
    k = counters[0]
    for counter, trip in zip(counters[1:], trips[1:]):
        k = arith.AddIOp(arith.MulIOp(k, trip).result, counter).result
    return to_i64(k)
