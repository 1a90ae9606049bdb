"""Scatter updates in a parfor body: `h[k] += v`, where two iterations may
update the same element (a histogram: `counts[keys[i]] += 1`).

Iterations run at the same time (CPU tasks, GPU threads), so a separate
load and store of such an element loses updates. Each such update
(updates.py: `+=`, `-=`, `*=`, `|=`, `&=`, `^=`, `h[k] = max(h[k], v)`,
`min`, `np.maximum`, `np.minimum`) becomes one atomic read-modify-write of
the element (atomic_updates.py); its load and operation statements are not
lowered on their own. An atomic costs more than a plain store (and much
more when many threads hit one element), so only the updates that need
one get it.

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
`out[j]` in a loop over j inside a prange over i, and the index of a prange
with a step (computed from the loop's counter, frontend/rewrites.py). As
for Numba's own prange, indices are taken not to wrap onto each other (an
index `i` of `prange(-n, n)` over n elements).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
from numba.core import ir as nir
from numba.core import types
from numba.parfors.parfor import Parfor

from ..lowering.errors import UnsupportedConstructError
from .atomic_updates import addition_kind, lower_update
from .updates import Update, Window, callee, updates_in, variable_uses

_ALLOCATORS = (np.empty, np.zeros, np.ones, np.full, np.empty_like, np.zeros_like,
               np.ones_like, np.full_like, np.copy, np.array)


@dataclass
class Level:
    """One parfor around an update."""
    indices: list[str]          # its loop variables
    assigned: dict              # name -> [(body, position)] of its assignments in the body


def atomic_updates(lw, parfor: Parfor) -> list[Update]:
    """The updates in `parfor`'s body (nested parfors' too) whose element
    two iterations may share."""
    uses = variable_uses(lw.func_ir)
    copies = index_copies(parfor)
    found = []
    # Where no threads share an iteration (the CPU), a nested parfor runs in
    # order inside it: only the outermost level's iterations run at once.
    concurrent = None if lw.target.cooperative_bodies else 1

    def walk(level_parfor: Parfor, levels: list) -> None:
        levels = levels + [Level([n.index_variable.name for n in level_parfor.loop_nests],
                                  assignments(level_parfor.loop_body.values()))]
        nested = [stmt for block in level_parfor.loop_body.values() for stmt in block.body
                  if isinstance(stmt, Parfor)]
        blocks = list(level_parfor.loop_body.values()) + [p.init_block for p in nested]
        for update in updates_in(lw, blocks, uses):
            if not _disjoint(lw, update, levels[:concurrent], copies):
                if isinstance(lw.typeof(update.array).dtype, types.Complex):
                    # no atomic read-modify-write of a (two-part) complex element
                    raise UnsupportedConstructError(
                        f"updating elements of the complex array '{update.array}' that "
                        "iterations may share (h[k] += z in a prange loop)", update.store.loc)
                found.append(update)
        for inner in nested:
            walk(inner, levels)
    walk(parfor, [])
    return found


def assignments(blocks) -> dict:
    found: dict = {}
    for block in blocks:
        for pos, stmt in enumerate(block.body):
            if isinstance(stmt, Parfor):
                inner = assignments([stmt.init_block] + list(stmt.loop_body.values()))
                for name, places in inner.items():
                    found.setdefault(name, []).extend(places)
            elif isinstance(stmt, nir.Assign):
                found.setdefault(stmt.target.name, []).append((block.body, pos))
    return found


def index_copies(parfor: Parfor) -> dict:
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
    assigned = assignments(parfor.loop_body.values())
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
    key = _built_elsewhere(Window(lw, update.body, pos).index(store, pos), levels[0].assigned)
    return all(_covers(key, level, copies) or own_array(lw, update.array, level, copies)
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


def _covers(key, level: Level, copies: dict) -> bool:
    """Does the index `key` hold each loop variable of `level`?"""
    items = key[1] if key[0] == "tuple" else (key,)
    held = {copies.get(item[1]) for item in items if item[0] == "var"}
    return all(index in held for index in level.indices)


def own_array(lw, name: str, level: Level, copies: dict) -> bool:
    """Is the array `name` made anew in each iteration of `level` (an
    allocation in its body, or a view taken there that covers the level)?"""
    places = level.assigned.get(name, [])
    if len(places) != 1:
        return False
    body, pos = places[0]
    value = body[pos].value
    if isinstance(value, nir.Var):
        return own_array(lw, value.name, level, copies)
    if not isinstance(value, nir.Expr):
        return False
    if value.op in ("getitem", "static_getitem"):
        key = Window(lw, body, pos).index(value, pos)
        return _covers(key, level, copies) or own_array(lw, value.value.name, level, copies)
    if value.op in ("arrayexpr", "binop", "unary"):
        return True                         # a new array
    if value.op == "call":
        function = callee(lw, body, pos, value.func.name)
        return any(function is fn for fn in _ALLOCATORS)
    return False


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


def privatizable(lw, parfor: Parfor, updates: list[Update]):
    """(array names, atomic_rmw kinds) when every update of `updates` is an
    exact atomic addition in the parfor's own body into an array from
    outside it that the body touches only through these updates; a target
    may then give each group of threads a private copy (a histogram in
    shared memory); else None."""
    own = {id(block.body) for block in parfor.loop_body.values()}
    assigned = assignments(parfor.loop_body.values())
    kinds: dict = {}
    for update in updates:
        dtype = lw.typeof(update.array).dtype
        kind = addition_kind(lw, update, dtype)
        if kind is None or id(update.body) not in own or update.array in assigned or \
                kinds.setdefault(update.array, kind) != kind:
            return None
    allowed = {id(u.read.value) for u in updates} | {id(u.store) for u in updates}
    blocks = list(parfor.loop_body.values())
    while blocks:
        for stmt in blocks.pop().body:
            if isinstance(stmt, Parfor):
                blocks += list(stmt.loop_body.values()) + [stmt.init_block]
                continue
            reader = stmt.value if isinstance(stmt, nir.Assign) else stmt
            if any(v.name in kinds for v in stmt.list_vars()) and id(reader) not in allowed:
                return None
    names = sorted(kinds)
    return names, [kinds[name] for name in names]
