"""Perfectly nested prange loops as one N-d parallel loop.

Numba keeps a prange nested in another as a parfor inside the outer
parfor's body, and runs it sequentially there; on a GPU that leaves one
thread per outer iteration. When the outer body is nothing but the inner
parfor and scalar statements (the inner loop's bounds, constants, copies of
the outer index), those that read the outer index move into the inner body,
the others before the loop, and the two loop nests become one, so every
(i, j) is a thread. The inner bounds must not depend on the outer index (a
triangular nest stays nested). prange promises independent iterations, so
the results are those of the nested loops.
"""
from __future__ import annotations

import copy

from numba.core import ir as nir
from numba.core import types
from numba.parfors.parfor import Parfor

from .scatter import atomic_updates

# Expressions that compute a scalar (or a shape) from scalars and shapes.
_PURE_OPS = {"binop", "unary", "cast", "build_tuple", "static_getitem", "getattr"}
_SHAPE_ATTRS = {"shape", "ndim", "size"}


def collapse_perfect_nest(lw, parfor: Parfor) -> Parfor:
    """`parfor` with every perfectly nested inner parfor merged into its loop
    nest (a copy; Numba's IR is left as it was), or `parfor` itself."""
    while True:
        inner = _single_inner(parfor)
        if inner is None or atomic_updates(lw, inner):
            # an inner loop updating an element that its iterations share
            # (`acc[i] += x[i, j]` over j) stays inner: merged, every (i, j)
            # would update acc[i] atomically at once
            return parfor
        between = parfor.loop_body[min(parfor.loop_body)].body[:-1] + inner.init_block.body
        if not all(_pure(lw, stmt) for stmt in between):
            return parfor
        # what reads the outer index is recomputed in the inner body, the rest
        # (the inner bounds among it) runs once before the loop
        per_iteration = _dependent(between, {n.index_variable.name for n in parfor.loop_nests})
        bounds = {v.name for n in inner.loop_nests for v in (n.start, n.stop, n.step)
                  if isinstance(v, nir.Var)}
        if any(stmt.target.name in bounds for stmt in per_iteration):
            return parfor
        merged = _copy(parfor)
        merged.init_block = nir.Block(parfor.init_block.scope, parfor.init_block.loc)
        moved = {id(stmt) for stmt in per_iteration}
        merged.init_block.body = parfor.init_block.body + [
            stmt for stmt in between if id(stmt) not in moved]
        merged.loop_nests = parfor.loop_nests + inner.loop_nests
        merged.loop_body = dict(inner.loop_body)
        entry = min(merged.loop_body)
        first = nir.Block(merged.loop_body[entry].scope, merged.loop_body[entry].loc)
        first.body = per_iteration + merged.loop_body[entry].body
        merged.loop_body[entry] = first
        parfor = merged


def _copy(parfor: Parfor) -> Parfor:
    """A shallow copy whose fields can be replaced (a Parfor is an ir.Expr:
    its fields live in one `_kws` dict, which copy.copy would share)."""
    duplicate = copy.copy(parfor)
    duplicate._kws = dict(parfor._kws)
    return duplicate


def _single_inner(parfor: Parfor):
    """The inner parfor, when the body is one block ending with it and neither
    loop has reductions or races."""
    if len(parfor.loop_body) != 1 or parfor.redvars or parfor.races:
        return None
    body = next(iter(parfor.loop_body.values())).body
    if not body or not isinstance(body[-1], Parfor):
        return None
    inner = body[-1]
    return None if inner.redvars or inner.races else inner


def _pure(lw, stmt) -> bool:
    if not isinstance(stmt, nir.Assign):
        return False
    value = stmt.value
    if isinstance(value, (nir.Const, nir.Global, nir.FreeVar)):
        return True
    ty = types.unliteral(lw.typeof(stmt.target.name))
    scalar = isinstance(ty, (types.Number, types.Boolean)) or \
        (isinstance(ty, types.BaseTuple) and all(isinstance(t, types.Integer) for t in ty))
    if isinstance(value, nir.Var):
        return scalar
    if not isinstance(value, nir.Expr) or value.op not in _PURE_OPS or not scalar:
        return False
    return value.op != "getattr" or value.attr in _SHAPE_ATTRS


def _dependent(stmts: list, names: set) -> list:
    """The statements that read `names`, directly or through an earlier one."""
    names, found = set(names), []
    for stmt in stmts:
        if any(v.name in names for v in stmt.list_vars() if v is not stmt.target):
            names.add(stmt.target.name)
            found.append(stmt)
    return found
