"""Lowering rules for Numba IR statements, keyed by statement class."""
from __future__ import annotations

from numba.core import ir as nir
from numba.parfors.parfor import Parfor

from .._mlir import cf
from . import arrays, casts, parfors
from .registry import Registry

stmt_rules = Registry("statements")


@stmt_rules.register(nir.Assign)
def lower_assign(lw, stmt: nir.Assign) -> None:
    value = stmt.value
    result = lw.lower_expr(value, stmt.target.name)
    fromty = lw.typeof(value.name) if isinstance(value, nir.Var) else None
    lw.write(stmt.target.name, result, fromty)


@stmt_rules.register(nir.SetItem)
def lower_setitem(lw, stmt: nir.SetItem) -> None:
    arrays.store_item(lw, stmt.target, lw.read(stmt.index), lw.typeof(stmt.index.name),
                      stmt.value)


@stmt_rules.register(nir.StaticSetItem)
def lower_static_setitem(lw, stmt: nir.StaticSetItem) -> None:
    index, index_ty = arrays.static_index(lw, stmt.index, stmt.index_var)
    arrays.store_item(lw, stmt.target, index, index_ty, stmt.value)


@stmt_rules.register(nir.Branch)
def lower_branch(lw, stmt: nir.Branch) -> None:
    cond = casts.truth(lw.read(stmt.cond), lw.typeof(stmt.cond.name))
    blocks = lw.region.blocks
    cf.CondBranchOp(cond, [], [], blocks[stmt.truebr], blocks[stmt.falsebr])


@stmt_rules.register(nir.Jump)
def lower_jump(lw, stmt: nir.Jump) -> None:
    lw.jump_to(stmt.target)


@stmt_rules.register(nir.Return)
def lower_return(lw, stmt: nir.Return) -> None:
    lw.lower_return(lw.read(stmt.value), lw.typeof(stmt.value.name))


@stmt_rules.register(nir.Del)
def lower_del(lw, stmt: nir.Del) -> None:
    """Lifetimes are MLIR's business (buffer deallocation), not Numba's."""


@stmt_rules.register(Parfor)
def lower_parfor(lw, stmt: Parfor) -> None:
    parfors.lower_parfor(lw, stmt)
