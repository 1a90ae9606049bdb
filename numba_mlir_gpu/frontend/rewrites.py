"""Rewrites of Numba IR that run inside our typed pipeline (typed_ir.py).

* `StepPrangeRewrite` (untyped IR, before type inference): Numba's ParforPass
  accepts only `prange` with step 1. `for i in prange(a, b, s)` becomes
  `for k in prange(trip_count(a, b, s)): i = a + k * s`.
* `SubstituteNumPyCalls` (untyped IR, before type inference): stand-ins
  (lowering/substitutes.py) for NumPy calls that Numba would type by
  compiling its own implementation.
* `MLIRPreParforPass`: Numba's PreParforPass, with the NumPy functions we
  lower ourselves (rules/reductions.py, rules/linalg.py) taken out of the table of
  functions it swaps for its own parallel implementations, so the calls
  reach our call rules intact; then `copy_views_of_the_target`.
"""
from __future__ import annotations

import operator

import numba
import numpy as np
from numba.core import ir, types
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.ir_utils import get_definition, guard, mk_unique_var
from numba.core.typed_passes import PreParforPass
from numba.misc.special import prange
from numba.parfors import parfor as numba_parfor

from ..lowering.substitutes import matmul, sum_with_axis

# Lowered by our call rules instead: Numba's versions use IndexValue pairs
# (argmin/argmax), leave matrix products to BLAS (dot), or fold with Python's
# max/min, which lets a NaN through only in first position (max/min/amax/amin).
OWN_IMPLEMENTATIONS = {("argmin", "numpy"), ("argmax", "numpy"), ("dot", "numpy"),
                       ("max", "numpy"), ("min", "numpy"), ("amax", "numpy"), ("amin", "numpy")}
SWAP_FUNCTIONS = {key: impl for key, impl in numba_parfor.swap_functions_map.items()
                  if key not in OWN_IMPLEMENTATIONS}


@register_pass(mutates_CFG=True, analysis_only=False)
class MLIRPreParforPass(PreParforPass):
    _name = "numba_mlir_gpu_pre_parfor_pass"

    def run_pass(self, state):
        numba_parfor.PreParforPass(
            state.func_ir, state.typemap, state.calltypes, state.typingctx, state.targetctx,
            state.flags.auto_parallel, state.parfor_diagnostics.replaced_fns,
            replace_functions_map=SWAP_FUNCTIONS).run()
        copy_views_of_the_target(state)
        return True


def copy_views_of_the_target(state) -> None:
    """`x[1:] = x[:-1]`: NumPy reads the right side before writing, but
    Numba's parfor pass makes the assignment one loop that reads and writes
    as it goes. A right side that is a view of the array assigned into is
    given to `np.copy` first."""
    func_ir, typemap = state.func_ir, state.typemap
    for block in func_ir.blocks.values():
        body = []
        for stmt in block.body:
            if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)) and \
                    isinstance(typemap.get(stmt.value.name), types.Array) and \
                    _viewed(func_ir, stmt.value) is not None and \
                    _root(func_ir, stmt.value) == _root(func_ir, stmt.target):
                body += _np_copy(state, stmt)
            body.append(stmt)
        block.body = body


def _viewed(func_ir, var):
    """The variable `var` is a view of (by indexing or `.T`), if it is one."""
    found = guard(get_definition, func_ir, var)
    if isinstance(found, ir.Expr) and (found.op in ("getitem", "static_getitem") or
                                       (found.op == "getattr" and found.attr == "T")):
        return found.value
    return None


def _root(func_ir, var) -> str:
    """The array a variable is, or is a view of."""
    while True:
        found = guard(get_definition, func_ir, var)
        if isinstance(found, ir.Var) or (isinstance(found, ir.Expr) and found.op == "cast"):
            var = found if isinstance(found, ir.Var) else found.value
            continue
        viewed = _viewed(func_ir, var)
        if viewed is None:
            return var.name
        var = viewed


def _np_copy(state, stmt) -> list:
    """`$copy = np.copy(value)` (typed), and the setitem retyped to read it."""
    scope, loc = stmt.value.scope, stmt.loc
    fnty = state.typingctx.resolve_value_type(np.copy)
    sig = fnty.get_call_type(state.typingctx, (state.typemap[stmt.value.name],), {})
    function = ir.Var(scope, mk_unique_var("$np_copy"), loc)
    copied = ir.Var(scope, mk_unique_var("$view_copy"), loc)
    call = ir.Expr.call(function, [stmt.value], (), loc)
    state.typemap[function.name], state.typemap[copied.name] = fnty, sig.return_type
    state.calltypes[call] = sig
    old = state.calltypes.pop(stmt)
    state.calltypes[stmt] = old.replace(args=old.args[:-1] + (sig.return_type,))
    state.func_ir._definitions[copied.name] = [call]
    stmt.value = copied
    return [ir.Assign(ir.Global("np.copy", np.copy, loc), function, loc),
            ir.Assign(call, copied, loc)]


@numba.njit
def prange_trip_count(start, stop, step):
    """len(range(start, stop, step)), with range()'s error for step 0."""
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    if step > 0:
        count = (stop - start + step - 1) // step
    else:
        count = (stop - start + step + 1) // step
    return max(count, 0)


_PRANGES = (prange, numba_parfor.internal_prange)


@register_pass(mutates_CFG=True, analysis_only=False)
class StepPrangeRewrite(FunctionPass):
    """prange(a, b, s) -> prange(trip count), the index recomputed in the body."""

    _name = "numba_mlir_gpu_step_prange"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        func_ir = state.func_ir
        changed = False
        for block in list(func_ir.blocks.values()):
            for i, stmt in enumerate(list(block.body)):
                call = stmt.value if isinstance(stmt, ir.Assign) else None
                if isinstance(call, ir.Expr) and call.op == "call" and len(call.args) == 3 \
                        and not call.kws and self._is_prange(func_ir, call.func) \
                        and not self._is_one(func_ir, call.args[2]):
                    self._rewrite(func_ir, block, stmt)
                    changed = True
        return changed

    @staticmethod
    def _definition(func_ir, var):
        try:
            return func_ir.get_definition(var)
        except Exception:      # noqa: BLE001  (several or no definitions)
            return None

    def _is_prange(self, func_ir, var) -> bool:
        value = self._definition(func_ir, var)
        if isinstance(value, ir.Expr) and value.op == "getattr":     # numba.prange
            module = self._definition(func_ir, value.value)
            return isinstance(module, (ir.Global, ir.FreeVar)) and \
                getattr(module.value, value.attr, None) in _PRANGES
        return isinstance(value, (ir.Global, ir.FreeVar)) and value.value in _PRANGES

    def _is_one(self, func_ir, var) -> bool:
        value = self._definition(func_ir, var)
        return isinstance(value, ir.Const) and value.value == 1

    def _rewrite(self, func_ir, block, stmt) -> None:
        call, loc, scope = stmt.value, stmt.loc, stmt.target.scope
        start, stop, step = call.args
        index = self._index_variable(func_ir, stmt.target)
        if index is None:
            return          # not a loop iterable: leave it to Numba's own error

        def new_var(name, value, body, at):
            var = ir.Var(scope, mk_unique_var(name), loc)
            body.insert(at, ir.Assign(value, var, loc))
            func_ir._definitions[var.name] = [value]
            return var

        at = block.body.index(stmt)
        fn = new_var("$prange_trip_count_fn",
                     ir.Global("prange_trip_count", prange_trip_count, loc), block.body, at)
        count = new_var("$prange_trip_count",
                        ir.Expr.call(fn, [start, stop, step], (), loc), block.body, at + 1)
        call.args = [count]
        # The body's `i = $k` becomes `i = start + $k * step`.
        index_block, assign = index
        at = index_block.body.index(assign)
        scaled = new_var("$prange_scaled",
                         ir.Expr.binop(operator.mul, assign.value, step, loc),
                         index_block.body, at)
        assign.value = ir.Expr.binop(operator.add, start, scaled, loc)
        func_ir._definitions[assign.target.name] = [assign.value]

    @staticmethod
    def _index_variable(func_ir, call_target):
        """(block, `i = $pair_first`) of the loop over `call_target`."""
        uses = {}
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign):
                    uses.setdefault(_source_name(stmt.value), []).append((block, stmt))
        chain = [call_target.name]
        for op in ("getiter", None, "iternext", "pair_first", None, None):
            found = [(b, s) for b, s in uses.get(chain[-1], ())
                     if (op is None and isinstance(s.value, ir.Var))
                     or (isinstance(s.value, ir.Expr) and s.value.op == op)]
            if len(found) != 1:
                return None
            if op is None and len(chain) == 6:
                return found[0]
            chain.append(found[0][1].target.name)
        return None


def _source_name(value):
    if isinstance(value, ir.Var):
        return value.name
    if isinstance(value, ir.Expr) and value.op in ("getiter", "iternext", "pair_first"):
        return value.value.name
    return None


# NumPy function -> (its stand-in, does each call need an axis for the swap)
_STAND_INS = {np.sum: (sum_with_axis, True), np.matmul: (matmul, False)}


@register_pass(mutates_CFG=False, analysis_only=False)
class SubstituteNumPyCalls(FunctionPass):
    """`np.sum(a, axis=...)` -> `sum_with_axis(a, axis=...)` and `np.matmul`
    -> `matmul` before type inference (lowering/substitutes.py says why)."""

    _name = "numba_mlir_gpu_substitute_numpy_calls"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        func_ir = state.func_ir
        calls = {}      # callee variable -> the calls through it
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and \
                        stmt.value.op == "call":
                    calls.setdefault(stmt.value.func.name, []).append(stmt.value)
        changed = False
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if not isinstance(stmt, ir.Assign):
                    continue
                function = self._numpy_function(func_ir, stmt.value)
                if function not in _STAND_INS:
                    continue
                stand_in, needs_axis = _STAND_INS[function]
                through = calls.get(stmt.target.name, [])
                used = sum(v.name == stmt.target.name for b in func_ir.blocks.values()
                           for s in b.body if not isinstance(s, ir.Del)
                           for v in s.list_vars())
                # every use is a call (1 use is the definition itself), with an axis if asked
                if through and used == len(through) + 1 and (not needs_axis or all(
                        len(c.args) >= 2 or any(k == "axis" for k, _ in c.kws)
                        for c in through)):
                    stmt.value = ir.Global(stand_in.__name__, stand_in, stmt.loc)
                    func_ir._definitions[stmt.target.name] = [stmt.value]
                    changed = True
        return changed

    @staticmethod
    def _numpy_function(func_ir, value):
        """The NumPy function `value` names (`np.f` or a global `f`), or None."""
        if isinstance(value, (ir.Global, ir.FreeVar)):
            return value.value if any(value.value is f for f in _STAND_INS) else None
        if isinstance(value, ir.Expr) and value.op == "getattr" and \
                value.attr in {f.__name__ for f in _STAND_INS}:
            try:
                module = func_ir.get_definition(value.value)
            except Exception:      # noqa: BLE001  (several or no definitions)
                return None
            if isinstance(module, (ir.Global, ir.FreeVar)) and module.value is np:
                return getattr(np, value.attr)
        return None
