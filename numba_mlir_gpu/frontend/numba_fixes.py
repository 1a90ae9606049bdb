"""Corrections of Numba bugs that our always-on parfor conversion meets, active only
while one of our pipelines compiles (stock Numba in the same process keeps its own
behaviour, so a comparison against it stays a comparison against Numba as shipped).

* `SymbolicEquivSet._insert` (numba/parfors/array_analysis.py): after merging two
  size classes it merges, in turn, the names at equal offsets from the class. A name
  in `ref_by[obj]` as `(name, j)` is `obj - j`, but it is filed under the offset `+j`
  (the `def_by` branch next to it files `name = obj - offset` under `-offset`), so
  names at opposite offsets are merged. With `m = n + 1; d = m - 1` (np.linspace's
  implementation computes `num - 1`), `n + 1` and `n - 1` become one size class:
  `out = np.zeros(n - 1); out[:] = np.linspace(0, 1, n + 1)[1:-1]` fails its size
  assertion (stock Numba with parallel=True fails alike), and a wrong equivalence
  can drop an assertion or fuse loops of different lengths. Fixed by filing under
  `-j`.
* `get_reduce_nodes` (numba/parfors/parfor.py; Numba issue 10132): the reduction
  analysis reads the loop body's statements as one straight list and follows copies
  through a name -> definition map; the phi copies of an inner loop with `continue`
  (`c.3 = c.2` at one edge, `c.2 = c.3` at the back edge) form a cycle there, and it
  raises `AssertionError: unexpected cycle in lookup()` (njit(parallel=True) fails
  alike: a k-means assignment with a running best value, a count in an inner `if`).
  Such copies carry no value into the reduction's own statements: on that error the
  analysis runs again without the copies whose names form a cycle; a cycle left after
  that is an UnsupportedConstructError naming the issue, not an AssertionError.
* `ArrayAnalysis._analyze_op_call` (numba/parfors/array_analysis.py): a namedtuple
  class called with keywords, `Pair(x, part1=y)`, gets the positional arguments alone
  as its "shape", one item short, and `insert_equiv` asserts `Dimension mismatch`
  (njit(parallel=True) fails alike). With keywords the call gets no shape, as any
  call Numba knows nothing of.
* `ir_utils.has_no_side_effect` (numba/core/ir_utils.py): `np.log` is on its list of
  calls without side effects whatever their arguments, so dead-code elimination drops
  `np.log(a, out)`, whose result is unused, and `out` is never written
  (njit(parallel=True) leaves it unwritten too). A call given an output argument keeps
  its side effect.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np
from numba.core import ir, ir_utils
from numba.core.ir_utils import get_definition, guard
from numba.parfors import array_analysis
from numba.parfors import parfor as numba_parfor

from ..lowering.errors import UnsupportedConstructError

_active = threading.local()


def active() -> bool:
    """Is one of our pipelines compiling (in this thread)?"""
    return bool(getattr(_active, "depth", 0))


_numba_insert = array_analysis.SymbolicEquivSet._insert


def _insert(self, objs):
    if not active():
        return _numba_insert(self, objs)
    # Numba's SymbolicEquivSet._insert, the ref_by offset's sign corrected
    indset = set()
    uniqs = set()
    for obj in objs:
        ind = self._get_ind(obj)
        if ind == -1:
            uniqs.add(obj)
        elif ind not in indset:
            uniqs.add(obj)
            indset.add(ind)
    if len(uniqs) <= 1:
        return False
    uniqs = list(uniqs)
    array_analysis.ShapeEquivSet._insert(self, uniqs)
    objs = self.ind_to_obj[self._get_ind(uniqs[0])]
    offset_dict = {}                       # k: the names equal to (any of objs) + k
    for obj in objs:
        if obj in self.def_by:
            value = self.def_by[obj]
            if isinstance(value, tuple):
                (name, offset) = value     # obj = name + offset
                offset_dict.setdefault(-offset, []).append(name)
                for (v, i) in self.ref_by.get(name, ()):   # name = v + i
                    offset_dict.setdefault(-(offset + i), []).append(v)
        for (name, j) in self.ref_by.get(obj, ()):         # obj = name + j
            offset_dict.setdefault(-j, []).append(name)
    for names in offset_dict.values():
        self._insert(names)
    return True


array_analysis.SymbolicEquivSet._insert = _insert

_numba_get_reduce_nodes = numba_parfor.get_reduce_nodes


def _get_reduce_nodes(reduction_node, nodes, func_ir):
    if not active():
        return _numba_get_reduce_nodes(reduction_node, nodes, func_ir)
    try:
        return _numba_get_reduce_nodes(reduction_node, nodes, func_ir)
    except AssertionError as exc:
        if _CYCLE not in str(exc):
            raise
    try:
        return _numba_get_reduce_nodes(reduction_node, without_copy_cycles(nodes), func_ir)
    except AssertionError as exc:
        if _CYCLE not in str(exc):
            raise
        raise UnsupportedConstructError(
            f"a prange reduction that Numba's parfor pass cannot analyse ('{_CYCLE}', Numba "
            "issue 10132; numba.njit(parallel=True) fails the same way)",
            reduction_node.loc) from exc


_CYCLE = "unexpected cycle in lookup()"


def without_copy_cycles(nodes: list) -> list:
    """`nodes` less the plain copies (`a = b`) whose target lies on a cycle of
    copies, as the analysis's map (the last definition of each name) sees them."""
    copies = {}
    for stmt in nodes:
        if isinstance(stmt, ir.Assign):
            copies[stmt.target.name] = stmt.value.name if isinstance(stmt.value, ir.Var) else None
    cyclic = set()
    for start in copies:
        seen, name = [], start
        while name in copies and copies[name] is not None and name not in seen:
            seen.append(name)
            name = copies[name]
        if name in seen:
            cyclic.update(seen[seen.index(name):])
    return [stmt for stmt in nodes if not (isinstance(stmt, ir.Assign) and
                                           isinstance(stmt.value, ir.Var) and
                                           stmt.target.name in cyclic)]


numba_parfor.get_reduce_nodes = _get_reduce_nodes

_numba_analyze_op_call = array_analysis.ArrayAnalysis._analyze_op_call


def _analyze_op_call(self, scope, equiv_set, expr, lhs):
    if active() and expr.kws:
        callee = guard(get_definition, self.func_ir, expr.func)
        if isinstance(callee, (ir.Global, ir.FreeVar)) and \
                array_analysis.is_namedtuple_class(callee.value):
            return None
    return _numba_analyze_op_call(self, scope, equiv_set, expr, lhs)


array_analysis.ArrayAnalysis._analyze_op_call = _analyze_op_call

_numba_has_no_side_effect = ir_utils.has_no_side_effect


def _has_no_side_effect(rhs, lives, call_table):
    if active() and isinstance(rhs, ir.Expr) and rhs.op == "call" \
            and call_table.get(rhs.func.name) == ["log", np] \
            and (len(rhs.args) > 1 or any(name == "out" for name, _ in rhs.kws)):
        return False
    return _numba_has_no_side_effect(rhs, lives, call_table)


ir_utils.has_no_side_effect = _has_no_side_effect
numba_parfor.has_no_side_effect = _has_no_side_effect


@contextlib.contextmanager
def corrected():
    """Numba's passes run inside this with the corrections above."""
    _active.depth = getattr(_active, "depth", 0) + 1
    try:
        yield
    finally:
        _active.depth -= 1
