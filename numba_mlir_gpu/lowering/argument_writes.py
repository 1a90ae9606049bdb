"""Which array arguments a function writes, and which it overwrites whole
before reading them: what the GPU target copies back to NumPy arguments, and
which mirrors need no copy in (targets.GPUStrategy)."""
from __future__ import annotations

import numpy as np
from numba.core import ir as nir
from numba import prange
from numba.parfors.array_analysis import assert_equiv
from numba.parfors.parfor import Parfor

from .optionals import OPTIONAL_CONVERSIONS


class Aliases:
    """Which arguments each variable may be, through copies, views and
    in-place operators. A variable assigned in several places (two
    branches, a loop: `u = v` at its end) may be any of them."""

    def __init__(self):
        self.argument: dict[str, int] = {}
        self.sources: dict[str, set] = {}

    def note(self, name: str, source: str) -> None:
        self.sources.setdefault(name, set()).add(source)

    def roots(self, name: str) -> set[int]:
        found, seen, work = set(), {name}, [name]
        while work:
            current = work.pop()
            if current in self.argument:
                found.add(self.argument[current])
            for source in self.sources.get(current, ()):
                if source not in seen:
                    seen.add(source)
                    work.append(source)
        return found


def written_arguments(func_ir) -> set[int]:
    """Indices of the arguments whose elements the function may write."""
    aliases, targets = Aliases(), set()

    def walk(blocks):
        for block in blocks:
            for stmt in block.body:
                if isinstance(stmt, Parfor):
                    walk([stmt.init_block, *stmt.loop_body.values()])
                elif isinstance(stmt, nir.Assign):
                    value = stmt.value
                    if isinstance(value, nir.Arg):
                        aliases.argument[stmt.target.name] = value.index
                    elif isinstance(value, nir.Var):
                        aliases.note(stmt.target.name, value.name)
                    elif isinstance(value, nir.Expr):
                        _note_expr(func_ir, stmt.target.name, value, aliases, targets)
                elif isinstance(stmt, (nir.SetItem, nir.StaticSetItem)):
                    targets.add(stmt.target.name)
    walk(func_ir.blocks.values())
    return set().union(*(aliases.roots(name) for name in targets))


def overwritten_arguments(func_ir) -> dict[int, list]:
    """Array arguments the function never reads and writes with one
    unconditional `arg[index] = ...` in a prange loop at the start of the
    function (its entry block): argument index -> the loop's stop per
    dimension, as ("const", n), ("dim", argument, axis) or ("value", argument).
    The mirror of such an argument needs no copy-in when the stops cover its
    shape (checked at run time)."""
    from numba.core.ir_utils import guard
    aliases = Aliases()
    for block in _all_blocks(func_ir.blocks.values()):
        for stmt in block.body:
            if isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Arg):
                aliases.argument[stmt.target.name] = stmt.value.index
            elif isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Var):
                aliases.note(stmt.target.name, stmt.value.name)
    read, writes = set(), {}
    for block, parfor, first in _blocks_in_context(func_ir):
        for stmt in block.body:
            if isinstance(stmt, nir.Assign) and isinstance(stmt.value, (nir.Arg, nir.Var)):
                continue
            if isinstance(stmt, (nir.SetItem, nir.StaticSetItem)):
                targets = aliases.roots(stmt.target.name)
                index = getattr(stmt, "index", None)
                place = (parfor, first, index.name if isinstance(index, nir.Var) else None)
                if len(targets) == 1:
                    writes.setdefault(targets.pop(), []).append(place)
                else:       # one of several arrays is written: count them all as read
                    read.update(targets)
                used = [v for v in stmt.list_vars() if v.name != stmt.target.name]
            elif isinstance(stmt, nir.Assign) and _only_looks_at_shape(func_ir, stmt.value):
                continue
            else:
                used = stmt.list_vars() if not isinstance(stmt, Parfor) else []
            read.update(*(aliases.roots(v.name) for v in used))
    entry = func_ir.blocks[min(func_ir.blocks)]
    result = {}
    for arg, places in writes.items():
        if arg in read:
            continue
        for parfor, first, index in places:
            if parfor is None or not first or parfor not in entry.body:
                continue
            if index != parfor.index_var.name:
                continue
            stops = [guard(_stop_source, func_ir, nest) for nest in parfor.loop_nests]
            if all(s is not None for s in stops):
                result[arg] = stops
                break
    return result


def _only_looks_at_shape(func_ir, value) -> bool:
    """`a.shape`, `a.ndim`, `a.size`, `len(a)`: no element is read."""
    if isinstance(value, nir.Expr) and value.op == "getattr":
        return value.attr in ("shape", "ndim", "size")
    if isinstance(value, nir.Expr) and value.op == "call" and len(value.args) == 1:
        fn = _definition(func_ir, value.func)
        return isinstance(fn, (nir.Global, nir.FreeVar)) and fn.value is len
    return False


def _stop_source(func_ir, nest):
    from numba.core.ir_utils import GuardException
    start, step = nest.start, nest.step
    if not (start == 0 or _const(func_ir, start) == 0) or not (step == 1 or _const(func_ir, step) == 1):
        raise GuardException
    stop = nest.stop
    if isinstance(stop, int):
        return ("const", stop)
    value = _definition(func_ir, stop)
    if isinstance(value, nir.Const) and isinstance(value.value, int):
        return ("const", value.value)
    if isinstance(value, nir.Arg):
        return ("value", value.index)
    if isinstance(value, nir.Expr) and value.op in ("static_getitem", "getitem"):
        index = value.index if value.op == "static_getitem" else _const(func_ir, value.index)
        shape = _definition(func_ir, value.value)
        if isinstance(shape, nir.Expr) and shape.op == "getattr" and shape.attr == "shape":
            array = _definition(func_ir, shape.value)
            if isinstance(array, nir.Arg) and isinstance(index, int):
                return ("dim", array.index, index)
    if isinstance(value, nir.Expr) and value.op == "call" and len(value.args) == 1:
        fn = _definition(func_ir, value.func)
        array = _definition(func_ir, value.args[0])
        if isinstance(fn, (nir.Global, nir.FreeVar)) and fn.value is len and \
                isinstance(array, nir.Arg):
            return ("dim", array.index, 0)
    raise GuardException


def _const(func_ir, var):
    value = _definition(func_ir, var) if isinstance(var, nir.Var) else var
    return value.value if isinstance(value, nir.Const) else value


def _all_blocks(blocks):
    for block in blocks:
        yield block
        for stmt in block.body:
            if isinstance(stmt, Parfor):
                yield from _all_blocks([stmt.init_block, *stmt.loop_body.values()])


def _blocks_in_context(func_ir):
    """(block, innermost parfor or None, is the parfor body's first block)."""
    def visit(blocks, parfor, first_label):
        for label, block in blocks:
            yield block, parfor, label == first_label
            for stmt in block.body:
                if isinstance(stmt, Parfor):
                    yield from visit([(None, stmt.init_block)], parfor, object())
                    yield from visit(sorted(stmt.loop_body.items()), stmt,
                                     min(stmt.loop_body))
    yield from visit(sorted(func_ir.blocks.items()), None, object())


# NumPy functions that write an array argument (besides ufunc outputs)
_WRITING_NUMPY_FUNCTIONS = {np.copyto, np.fill_diagonal, np.put, np.place, np.putmask,
                            np.random.shuffle}
# NumPy functions whose result may be a view of their first argument
_VIEW_NUMPY_FUNCTIONS = {np.reshape, np.ravel, np.transpose, np.squeeze, np.expand_dims,
                         np.asarray, np.ascontiguousarray, np.asfortranarray, np.atleast_1d,
                         np.atleast_2d, np.atleast_3d, np.swapaxes, np.moveaxis, np.broadcast_to,
                         np.diagonal}


def called_object(func_ir, expr):
    """The Python object a call's function variable is bound to (a global,
    or an attribute of a global module such as `np.empty_like`), or None."""
    definition = _definition(func_ir, expr.func)
    if isinstance(definition, nir.Expr) and definition.op == "getattr":
        module = _definition(func_ir, definition.value)
        if isinstance(module, (nir.Global, nir.FreeVar)):
            return getattr(module.value, definition.attr, None)
        return None
    return definition.value if isinstance(definition, (nir.Global, nir.FreeVar)) else None


def _definition(func_ir, var):
    """The one definition of `var`, or None (none known, or several: a
    variable assigned in a loop or in two branches)."""
    from numba.core.ir_utils import guard
    try:
        return guard(func_ir.get_definition, var)
    except KeyError:
        return None


def _is_numpy(fn) -> bool:
    return isinstance(fn, np.ufunc) or getattr(fn, "__module__", None) == "numpy" or \
        str(getattr(fn, "__module__", "")).startswith("numpy.")


# Python builtins that never write an array they are given nor return a view
# of one (`range(x.shape[0])` reads a number that aliases x through `.shape`);
# not enumerate/zip, whose items may be rows written through
_READING_BUILTINS = {len, range, min, max, abs, int, float, bool, complex, round, print,
                     slice, isinstance, prange}


def _writes_arguments(fn, expr) -> list:
    """The arguments a call may write: a ufunc's outputs, everything given
    to jitted or unknown callees, nothing given to other NumPy functions
    (np.empty_like(x) leaves x alone: no copy back) or to reading builtins."""
    if isinstance(fn, np.ufunc):
        return list(expr.args[fn.nin:]) + [var for name, var in expr.kws if name == "out"]
    if fn is assert_equiv or any(fn is c for c in OPTIONAL_CONVERSIONS) or \
            (_is_numpy(fn) and fn not in _WRITING_NUMPY_FUNCTIONS):
        return []       # (an Optional's conversions alias their argument: _note_expr)
    try:
        if fn in _READING_BUILTINS:
            return []
    except TypeError:           # an unhashable callable
        pass
    return list(expr.args)


def _note_expr(func_ir, target: str, expr, aliases: Aliases, targets: set) -> None:
    """Views alias what they index (`a[i]`, `a[1:3]`, `a.T`, `a.reshape()`),
    a tuple its items;
    in-place operators write their left operand; a call may write the arrays
    it is given (jitted callees, ufunc outputs)."""
    if expr.op in ("getitem", "static_getitem", "getattr", "getiter", "iternext",
                   "pair_first", "pair_second", "exhaust_iter"):
        aliases.note(target, expr.value.name)     # iterating yields views (rows) too
    elif expr.op == "build_tuple":      # `t = (a, b); t[k][i] = v` writes a or b
        for item in expr.items:
            aliases.note(target, item.name)
    elif expr.op == "inplace_binop":
        targets.add(expr.lhs.name)
        aliases.note(target, expr.lhs.name)
    elif expr.op == "call":
        fn = called_object(func_ir, expr)
        targets.update(arg.name for arg in _writes_arguments(fn, expr))
        if fn is None and expr.func.name in aliases.sources:   # a method of an array (a.reshape())
            targets.add(expr.func.name)
            aliases.note(target, expr.func.name)
        elif expr.args and (not _is_numpy(fn) or fn in _VIEW_NUMPY_FUNCTIONS):
            aliases.note(target, expr.args[0].name)     # the result may be a view of it
