"""Lowering rules for Numba IR statements, keyed by statement class.

The Parfor statement's rule is the parallel package's (parallel/parfors.py).
"""
from __future__ import annotations

from numba.core import ir as nir

from .._mlir import cf
from . import casts
from .errors import UnsupportedConstructError
from .indexing import static_index, store_item
from .registry import stmt_rules
from .values import ExceptionValue, PyValue


@stmt_rules.register(nir.Assign)
def lower_assign(lw, stmt: nir.Assign) -> None:
    value = stmt.value
    result = lw.lower_expr(value, stmt.target.name)
    fromty = lw.typeof(value.name) if isinstance(value, nir.Var) else None
    lw.write(stmt.target.name, result, fromty)


@stmt_rules.register(nir.SetItem)
def lower_setitem(lw, stmt: nir.SetItem) -> None:
    store_item(lw, stmt.target, lw.read(stmt.index), lw.typeof(stmt.index.name), stmt.value)


@stmt_rules.register(nir.StaticSetItem)
def lower_static_setitem(lw, stmt: nir.StaticSetItem) -> None:
    index, index_ty = static_index(lw, stmt.index, stmt.index_var)
    store_item(lw, stmt.target, index, index_ty, stmt.value)


@stmt_rules.register(nir.Branch)
def lower_branch(lw, stmt: nir.Branch) -> None:
    cond = casts.truth(lw.read(stmt.cond), lw.typeof(stmt.cond.name))
    blocks = lw.region.blocks
    operands = lw.branch_operands()
    cf.CondBranchOp(cond, operands, operands, blocks[stmt.truebr], blocks[stmt.falsebr])


@stmt_rules.register(nir.Jump)
def lower_jump(lw, stmt: nir.Jump) -> None:
    lw.jump_to(stmt.target)


@stmt_rules.register(nir.Return)
def lower_return(lw, stmt: nir.Return) -> None:
    lw.lower_return(lw.read(stmt.value), lw.typeof(stmt.value.name))


@stmt_rules.register(nir.Del)
def lower_del(lw, stmt: nir.Del) -> None:
    """Lifetimes are MLIR's business (buffer deallocation), not Numba's."""


@stmt_rules.register(nir.PopBlock)
def lower_pop_block(lw, stmt: nir.PopBlock) -> None:
    """The end of a `with` block whose context Numba has already expanded
    into calls (numba.parallel_chunksize): nothing to do, as in Numba."""


@stmt_rules.register(nir.StaticRaise)
def lower_static_raise(lw, stmt: nir.StaticRaise) -> None:
    if stmt.exc_class is None:
        raise UnsupportedConstructError("a bare 'raise' (re-raising)", stmt.loc)
    lw.errors.raise_status(lw, lw.errors.code(stmt.exc_class, tuple(stmt.exc_args or ())))


@stmt_rules.register(nir.Raise)
def lower_raise(lw, stmt: nir.Raise) -> None:
    value = lw.read(stmt.exception) if stmt.exception is not None else None
    obj = value.obj if isinstance(value, PyValue) else None
    if isinstance(obj, ExceptionValue):
        lw.errors.raise_status(lw, lw.errors.code(obj.cls, obj.args))
    elif isinstance(obj, type) and issubclass(obj, BaseException):
        lw.errors.raise_status(lw, lw.errors.code(obj, ()))
    else:
        raise UnsupportedConstructError("this 'raise'", stmt.loc)


@stmt_rules.register(nir.DynamicRaise)
def lower_dynamic_raise(lw, stmt: nir.DynamicRaise) -> None:
    """The exception class is known; arguments computed at run time are
    replaced by a note (only constants travel back to Python)."""
    args = tuple(a if not isinstance(a, nir.Var) else "<value computed at run time>"
                 for a in (stmt.exc_args or ()))
    lw.errors.raise_status(lw, lw.errors.code(stmt.exc_class, args))

