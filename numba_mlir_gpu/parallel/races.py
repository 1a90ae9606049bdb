"""Plain stores that iterations of a prange provably make to one element
with different values: refused at compile time.

Iterations run at the same time, so when several of them store into one
element, the value left there depends on which thread stores last: a
result that changes from run to run (on Numba's CPU threads as on the GPU)
and differs from the serial loop's, silently. Read-modify-writes of a shared
element (`h[k] += v`) are made atomic instead (scatter.py); a plain store has
no order-free meaning, so it is refused, with a rewrite suggested.

Refused: a store `a[index] = v` in a parfor body (nested parfors included)
where
* every position of the index is a constant, a variable the loop nest does
  not assign (defined before the loop), or `i // c` or `i % c` of a loop
  variable `i` of the outermost parfor with a constant `c >= 2` (so
  iterations i and i + 1, or i and i + c, meet), and
* the value stored is not a constant or a variable defined before the loop
  (all iterations storing the same value leave the same result: a flag
  `found[0] = 1` is fine), and
* the array comes from outside the loop (one the iteration makes or binds,
  `t = np.empty(2)` or a view `arr[i:i + 1]`, is its own or moves with it).

Not refused, as in Numba: indices read from the data (`out[perm[i]] = v`,
taken to be distinct: a permutation), and any index holding a loop
variable some other way (`out[i]`, `out[2 * i + 1]`, `out[i, j]`).
"""
from __future__ import annotations

import operator

from numba.core import ir as nir
from numba.parfors.parfor import Parfor

from ..lowering.errors import UnsupportedConstructError, user_name
from .scatter import assignments, index_copies
from .updates import Window, updates_in, variable_uses


def refuse_colliding_stores(lw, parfor: Parfor) -> None:
    """Raise UnsupportedConstructError for the first store of `parfor`'s
    nest that iterations provably share with different values."""
    assigned = assignments(parfor.loop_body.values())
    copies = index_copies(parfor)
    outer = {n.index_variable.name for n in parfor.loop_nests}
    blocks = nest_blocks(parfor)
    updates = {id(u.store) for u in updates_in(lw, blocks, variable_uses(lw.func_ir))}
    for block in blocks:
        for pos, stmt in enumerate(block.body):
            if not isinstance(stmt, (nir.SetItem, nir.StaticSetItem)) or id(stmt) in updates:
                continue
            if stmt.target.name in assigned:
                continue        # an array bound in the iteration: a view `arr[i:i + 1]`, ...
            window = Window(lw, block.body, pos)
            shared = _shared_index(window.index(stmt, pos), assigned, copies, outer)
            if shared is None or _same_for_all(window.key(stmt.value.name, pos), assigned):
                continue
            array = user_name(stmt.target.name)
            raise UnsupportedConstructError(
                f"storing into {array}[...] from iterations of a prange that {shared}, with "
                "values that differ by iteration: the element would keep whichever thread "
                "stores last, not the serial loop's value. Store each element from one "
                f"iteration (a loop over the elements of {array}), or make it a reduction "
                f"(`s = max(s, v)` into a scalar, `{array}[k] += v`)", stmt.loc)


def nest_blocks(parfor: Parfor) -> list:
    blocks, work = [], [parfor]
    while work:
        current = work.pop()
        for block in current.loop_body.values():
            blocks.append(block)
            work += [stmt for stmt in block.body if isinstance(stmt, Parfor)]
        if current is not parfor:
            blocks.append(current.init_block)
    return blocks


def _shared_index(key, assigned: dict, copies: dict, outer: set):
    """How iterations share the element `key` indexes, or None when they
    need not."""
    items = key[1] if key[0] == "tuple" else (key,)
    kinds = [_position(item, assigned, copies, outer) for item in items]
    if None in kinds:
        return None
    if all(kind == "fixed" for kind in kinds):
        return "all store into one element (its index does not change with the loop variable)"
    divisor = next(kind for kind in kinds if kind != "fixed")
    return f"share elements (an index {divisor} of the loop variable)"


def _position(item, assigned: dict, copies: dict, outer: set):
    """'fixed' for a position that is the same in every iteration; a
    description for `i // c` or `i % c`; None for anything else."""
    if item[0] == "const":
        return "fixed"
    if item[0] == "var":
        return "fixed" if item[1] not in assigned and item[1] not in copies else None
    if item[0] == "binop" and item[1] in (operator.floordiv, operator.mod):
        _, fn, lhs, rhs = item
        if lhs[0] == "var" and copies.get(lhs[1]) in outer and rhs[0] == "const" and \
                isinstance(rhs[1], int) and rhs[1] >= 2:
            return f"'// {rhs[1]}'" if fn is operator.floordiv else f"'% {rhs[1]}'"
    return None


def _same_for_all(key, assigned: dict) -> bool:
    """Is the stored value the same in every iteration (a constant, or a
    variable the nest does not assign)?"""
    return key[0] == "const" or (key[0] == "var" and key[1] not in assigned)
