"""Compile-time checks of a kernel's typed IR (kernel API, part 3): every
work-item of a group must reach each barrier, group collective and shuffle
(all items of a warp exchange values), so none
may sit under a branch (an `if`, a loop's test) whose condition depends on
the work-item's id: data flow from get_local_id / get_global_id. A loop
whose trip count is the same for every item (the tree reduction's
`while s > 0: ...; s //= 2`) is fine."""
from __future__ import annotations

from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks

from . import api
from .typing import GROUP_OPS

ITEM_IDS = (api.get_local_id, api.get_global_id)
COLLECTIVES = {api.barrier: "barrier()"}
COLLECTIVES.update({fn: f"group.{name}()" for name, fn in GROUP_OPS.items()})


def callee_key(typemap, expr):
    """The Python object a call's callee type stands for (templates' key)."""
    fnty = typemap.get(expr.func.name)
    if isinstance(fnty, types.Function):
        return fnty.templates[0].key
    return None


def _calls(func_ir):
    for label, block in func_ir.blocks.items():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) \
                    and stmt.value.op == "call":
                yield label, stmt


def _used_names(value) -> set:
    if isinstance(value, ir.Var):
        return {value.name}
    if isinstance(value, ir.Expr):
        return {v.name for v in value.list_vars()}
    return set()


def item_dependent(func_ir, typemap) -> set:
    """Names of the variables whose values may differ between the items of
    a group because they come from get_local_id / get_global_id."""
    tainted = set()
    for _, stmt in _calls(func_ir):
        try:
            key = callee_key(typemap, stmt.value)
        except (TypeError, AttributeError):
            key = None
        if key in ITEM_IDS:
            tainted.add(stmt.target.name)
    changed = True
    while changed:
        changed = False
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and stmt.target.name not in tainted and \
                        _used_names(stmt.value) & tainted:
                    tainted.add(stmt.target.name)
                    changed = True
    return tainted


def _divergent_blocks(func_ir, tainted: set) -> set:
    """Labels of blocks control-dependent on a branch on a tainted value."""
    cfg = compute_cfg_from_blocks(func_ir.blocks)
    postdoms = cfg.post_dominators()
    divergent = set()
    for label, block in func_ir.blocks.items():
        term = block.terminator
        if not (isinstance(term, ir.Branch) and term.cond.name in tainted):
            continue
        for succ in (term.truebr, term.falsebr):
            # blocks that post-dominate the successor but not the branch
            for other in func_ir.blocks:
                if other in postdoms.get(succ, set()) | {succ} and \
                        other not in postdoms.get(label, set()):
                    divergent.add(other)
    return divergent


def _argument_of(func_ir, var):
    """The index of the argument `var` is (through copies), if any."""
    for _ in range(20):
        try:
            definition = func_ir.get_definition(var)
        except KeyError:
            return None
        if isinstance(definition, ir.Arg):
            return definition.index
        if not isinstance(definition, ir.Var):
            return None
        var = definition
    return None


def written_parameters(state) -> set:
    """Indices of the kernel's arguments it may write: item assignments
    (lowering/argument_writes.py) and the arrays of its atomics."""
    from ..lowering.argument_writes import written_arguments
    from .typing import ATOMIC_OPS
    written = set(written_arguments(state.func_ir))
    atomics = set(ATOMIC_OPS.values())
    for _, stmt in _calls(state.func_ir):
        expr = stmt.value
        if callee_key(state.typemap, expr) in atomics and expr.args:
            index = _argument_of(state.func_ir, expr.args[0])
            if index is not None:
                written.add(index)
        elif callee_key(state.typemap, expr) is None:
            # a call of another function: it may write any array it is given
            for arg in expr.args:
                index = _argument_of(state.func_ir, arg)
                if index is not None:
                    written.add(index)
    return written


def check_kernel(state) -> None:
    from .rules import KernelConstructError
    func_ir, typemap = state.func_ir, state.typemap
    sites = []
    for label, stmt in _calls(func_ir):
        key = callee_key(typemap, stmt.value)
        if key in COLLECTIVES:
            sites.append((label, stmt, COLLECTIVES[key]))
    if not sites:
        return
    divergent = _divergent_blocks(func_ir, item_dependent(func_ir, typemap))
    for label, stmt, what in sites:
        if label in divergent:
            raise KernelConstructError(
                f"{what} under a condition or in a loop that depends on the work-item's id "
                "(get_local_id / get_global_id): every work-item of a group must reach it",
                stmt.loc)
