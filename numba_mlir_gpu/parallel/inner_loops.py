"""Inner `range` loops of a prange body as nested parfors, when their
iterations are independent: maps (each iteration writes its own elements)
and reductions (`s += ...`, `m = max(m, ...)`, "best value and its index").

A target that runs the body of a prange on several threads (a GPU block per
iteration) spreads the iterations of such a nested parfor over the threads
and combines the reductions' partial results; elsewhere a nested parfor
runs in order, as the loop did. The conversion works on a copy of the
parfor (Numba's IR is left as it was) and only on loops at the first level
of the body (loops inside them stay loops of one thread).

A loop is converted when
* it is `for j in range(...)` with one entry and one exit (no `break`, no
  `return` from it), and does not assign `j`;
* every variable it carries from one iteration to the next is a reduction:
  each use is `v op= e`, `v = v op e`, `v = min(v, e)` / `max(v, e)` (the
  accumulator first, which is how NaNs are skipped), `np.minimum` /
  `np.maximum` (NaN wins), with `e` computed without any carried value; or
  a group `if cand < key: key = cand; p = ...` (also `<=`, `>`, `>=`)
  replacing the key and its payload together;
* every array element it writes is indexed by `j` itself at some position,
  the other positions the same in every iteration (`out[i, j]`), so no two
  iterations write the same element; an array it writes is read only at
  the element being written (`out[i, j] /= s`), and no other name in the
  body reaches the same array (a view of it, say); or the write is a
  scatter update (`h[k] += 1`, updates.py), which scatter.py makes atomic:
  one operator per array, which the loop neither reads nor writes
  otherwise (two operators would make the result depend on the order);
* it makes no array, calls nothing with an array argument, and contains no
  parfor. Arrays passed as different arguments are taken not to overlap,
  as for prange itself.
"""
from __future__ import annotations

import copy
import operator
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from numba.core import ir as nir
from numba.core import types
from numba.core.analysis import compute_cfg_from_blocks, compute_live_map, compute_use_defs
from numba.parfors.parfor import LoopNest, Parfor

from .reduction import NAN_MAX, NAN_MIN, Reduction, SelectReduction
from .updates import updates_in, variable_uses

_ADDITIVE = {operator.iadd, operator.add, operator.isub, operator.sub}
_MULTIPLICATIVE = {operator.imul, operator.mul}
_SUBTRACTIONS = {operator.isub, operator.sub}
_COMPARISONS = {operator.lt: "lt", operator.le: "le", operator.gt: "gt", operator.ge: "ge"}
_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
# called reductions: the combining operator, and whether the accumulator must
# be the first argument (Python's min/max skip a NaN only in second place)
_CALLED = {min: (min, True), max: (max, True),
           np.minimum: (NAN_MIN, False), np.maximum: (NAN_MAX, False)}


def parallelize_inner_loops(lw, parfor: Parfor) -> Parfor:
    """`parfor`, or a copy of it whose first-level inner loops that qualify
    are nested parfors (their reductions in the attribute
    `inner_reductions`)."""
    body = _Body(lw, parfor)
    converted = False
    for loop in body.first_level_loops():
        inner = _InnerLoop.match(body, loop)
        if inner is not None and inner.convert():
            converted = True
    if not converted:
        return parfor
    result = copy.copy(parfor)
    result._kws = dict(parfor._kws)     # a Parfor keeps its fields in one dict (collapse.py)
    result.loop_body = body.finished_blocks()
    return result


class _Body:
    """Copies of the parfor's body blocks and the facts about them."""

    def __init__(self, lw, parfor: Parfor):
        self.lw = lw
        self.parfor = parfor
        # statements are shared with Numba's IR; blocks and their lists are ours
        self.blocks = {}
        for label, block in parfor.loop_body.items():
            new = nir.Block(block.scope, block.loc)
            new.body = [stmt for stmt in block.body if not isinstance(stmt, nir.Del)]
            self.blocks[label] = new
        self._uses = None
        self.end = max(self.blocks) + 1          # the body's exit, for the CFG only
        self.start = min(self.blocks)
        self.assigned = {}                       # name -> [(label, Assign)]
        for label, block in self.blocks.items():
            for stmt in block.body:
                if isinstance(stmt, nir.Assign):
                    self.assigned.setdefault(stmt.target.name, []).append((label, stmt))

    def cfg_blocks(self) -> dict:
        """The blocks with a synthetic exit, as Numba's CFG analysis wants."""
        blocks = {}
        for label, block in self.blocks.items():
            if block.body and block.body[-1].is_terminator:
                blocks[label] = block
                continue
            closed = nir.Block(block.scope, block.loc)
            closed.body = block.body + [nir.Jump(self.end, block.loc)]
            blocks[label] = closed
        scope, loc = self.blocks[self.start].scope, self.parfor.loc
        exit_block = nir.Block(scope, loc)
        exit_block.body = [nir.Return(nir.Var(scope, "$inner_loops_exit", loc), loc)]
        blocks[self.end] = exit_block
        return blocks

    def first_level_loops(self) -> list:
        blocks = self.cfg_blocks()
        cfg = compute_cfg_from_blocks(blocks)
        self.cfg = cfg
        usedefs = compute_use_defs(blocks)
        self.defmap = usedefs.defmap
        self.live_map = compute_live_map(cfg, blocks, usedefs.usemap, usedefs.defmap)
        loops = list(cfg.loops().values())
        return [loop for loop in loops
                if not any(loop.header in other.body and other is not loop for other in loops)]

    def definition(self, name: str):
        """The value of the single assignment to `name` in the body, or in
        the function outside it; None when it has several."""
        found = self.assigned.get(name)
        if found is not None:
            return found[0][1].value if len(found) == 1 else None
        try:
            defs = self.lw.func_ir._definitions[name]
        except KeyError:
            return None
        return defs[0] if len(defs) == 1 else None

    def callee(self, name: str):
        """The Python object a call's function variable holds (a global, or
        an attribute of a global module such as `np.maximum`), else None."""
        value = self.definition(name)
        if isinstance(value, (nir.Global, nir.FreeVar)):
            return value.value
        if isinstance(value, nir.Expr) and value.op == "getattr":
            module = self.definition(value.value.name)
            if isinstance(module, (nir.Global, nir.FreeVar)):
                return getattr(module.value, value.attr, None)
        return None

    def typeof(self, name: str):
        return types.unliteral(self.lw.typeof(name))

    def uses(self):
        """How many times each variable of the function is read."""
        if self._uses is None:
            self._uses = variable_uses(self.lw.func_ir)
        return self._uses

    def finished_blocks(self) -> dict:
        """The blocks with straight chains merged (a block jumping to one
        whose only predecessor it is), so that a body left with one inner
        parfor and scalar code is one block (collapse.py merges such nests)."""
        blocks = self.blocks
        merged = True
        while merged:
            merged = False
            preds = {label: 0 for label in blocks}
            for block in blocks.values():
                for target in _successors(block):
                    if target in preds:
                        preds[target] += 1
            for label in sorted(blocks):
                block = blocks[label]
                if not block.body or not isinstance(block.body[-1], nir.Jump):
                    continue
                target = block.body[-1].target
                if target in blocks and target != label and target != self.start \
                        and preds[target] == 1:
                    block.body = block.body[:-1] + blocks.pop(target).body
                    merged = True
                    break
        return blocks


def _successors(block) -> list:
    if not block.body:
        return []
    last = block.body[-1]
    if isinstance(last, nir.Jump):
        return [last.target]
    if isinstance(last, nir.Branch):
        return [last.truebr, last.falsebr]
    return []


@dataclass
class _InnerLoop:
    body: _Body
    header: int
    labels: set                 # the loop's blocks but the header
    exit: int
    index: str                  # the loop variable (pair_first of the header)
    bounds: tuple               # start, stop, step: Vars or ints
    iterator: str = ""          # getiter(range(...)) feeding the header
    reductions: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)     # label -> statements to add (select positions)

    @classmethod
    def match(cls, body: _Body, loop) -> Optional["_InnerLoop"]:
        if len(loop.entries) != 1 or len(loop.exits) != 1:
            return None
        exit_label = next(iter(loop.exits))
        if exit_label == body.end:
            return None
        labels = set(loop.body) - {loop.header}
        # the only way out is the header's test (no break)
        for label in labels:
            if exit_label in _successors(body.blocks[label]):
                return None
        header = [s for s in body.blocks[loop.header].body]
        if len(header) != 4 or not isinstance(header[3], nir.Branch):
            return None
        pair, first, second, branch = header
        if not (_is_expr(pair, "iternext") and _is_expr(first, "pair_first")
                and _is_expr(second, "pair_second")
                and first.value.value.name == pair.target.name
                and second.value.value.name == pair.target.name
                and branch.cond.name == second.target.name
                and branch.falsebr == exit_label and branch.truebr in labels):
            return None
        bounds = _range_bounds(body, pair.value.value.name)
        if bounds is None or branch.truebr != min(labels):
            return None     # (a nested body is entered at its smallest label)
        return cls(body, loop.header, labels, exit_label, first.target.name, bounds,
                   iterator=pair.value.value.name)

    def convert(self) -> bool:
        """Replace the loop by a nested parfor, if it qualifies."""
        if not (self._reductions_found() and self._memory_is_independent()):
            return False
        body = self.body
        scope, loc = body.blocks[self.header].scope, body.blocks[self.header].loc
        loop_body = {}
        end_label = max(self.labels) + 1
        while end_label in body.blocks or end_label in loop_body:
            end_label += 1
        for label in sorted(self.labels):
            block = body.blocks.pop(label)
            new = nir.Block(block.scope, block.loc)
            new.body = []
            for stmt in block.body:
                if isinstance(stmt, nir.Jump) and stmt.target == self.header:
                    stmt = nir.Jump(end_label, stmt.loc)
                new.body.append(stmt)
                new.body.extend(self.extra.get(id(stmt), []))
            loop_body[label] = new
        loop_body[end_label] = nir.Block(scope, loc)
        index = nir.Var(scope, self.index, loc)
        nested = Parfor([LoopNest(index, *self.bounds)], nir.Block(scope, loc), loop_body, loc,
                        index, body.parfor.equiv_set, ("prange", "inner range loop", None),
                        body.parfor.flags)
        nested.params = set()               # nothing carried but the reductions
        nested.inner_reductions = self.reductions
        header = nir.Block(scope, loc)
        header.body = [nested, nir.Jump(self.exit, loc)]
        body.blocks[self.header] = header
        self._drop_iterator()
        return True

    def _drop_iterator(self) -> None:
        """The range call and its iterator, read by nothing now (so that a
        body left with the nested parfor and scalar code collapses)."""
        getiter = self.body.definition(self.iterator)
        dead = {self.iterator, getiter.value.name}
        for block in self.body.blocks.values():
            if any(v.name in dead for stmt in block.body for v in stmt.list_vars()
                   if not (isinstance(stmt, nir.Assign) and stmt.target.name in dead)):
                return
        for block in self.body.blocks.values():
            block.body = [stmt for stmt in block.body
                          if not (isinstance(stmt, nir.Assign) and stmt.target.name in dead)]

    # -- what the loop carries ------------------------------------------------

    def _statements(self):
        for label in sorted(self.labels):
            for stmt in self.body.blocks[label].body:
                yield label, stmt

    def _reductions_found(self) -> bool:
        body = self.body
        defined = set().union(*(body.defmap[label] for label in self.labels))
        if self.index in defined:
            return False
        carried = sorted(body.live_map[self.header] & defined)
        uses = _uses(self._statements())
        chains = {name: self._copy_chain(name) for name in carried}
        claimed = set()
        for name in carried:
            if name in claimed:
                continue
            reduction = self._arithmetic(name, chains[name], uses)
            if reduction is None:
                reduction = self._select(name, chains, uses)
            if reduction is None:
                return False
            self.reductions.append(reduction)
            claimed.update(reduction.names)
        return True

    def _copy_chain(self, name: str) -> set:
        """`name` and the variables of the loop that copy it, transitively."""
        chain, changed = {name}, True
        while changed:
            changed = False
            for _, stmt in self._statements():
                if isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Var) \
                        and stmt.value.name in chain and stmt.target.name not in chain:
                    chain.add(stmt.target.name)
                    changed = True
        return chain

    def _arithmetic(self, name: str, chain: set, uses: dict) -> Optional[Reduction]:
        """`name` accumulated with one operator: + (and -), *, min, max."""
        ty = self.body.typeof(name)
        if not isinstance(ty, (types.Integer, types.Float)):
            return None
        family, updates = None, set()
        chain = set(chain)
        changed = True
        while changed:          # the chain grows by the updates' results and their copies
            changed = False
            for _, stmt in self._statements():
                if not isinstance(stmt, nir.Assign) or stmt.target.name in chain:
                    continue
                if isinstance(stmt.value, nir.Var) and stmt.value.name in chain:
                    chain.add(stmt.target.name)
                    changed = True
                    continue
                op = self._update(stmt.value, chain)
                if op is None:
                    continue
                if family is not None and op is not family:
                    return None
                family = op
                updates.add(id(stmt.value))
                chain.add(stmt.target.name)
                changed = True
        if family is None:
            return None
        for member in chain:
            for stmt, value in uses.get(member, []):
                copy_into_chain = isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Var) \
                    and stmt.target.name in chain
                if not copy_into_chain and id(value) not in updates:
                    return None
            for label, stmt in self.body.assigned.get(member, []):
                if label in self.labels and not (isinstance(stmt.value, nir.Var) and
                                                 stmt.value.name in chain) \
                        and id(stmt.value) not in updates:
                    return None
        identity = {operator.add: 0, operator.mul: 1}.get(family)
        return Reduction(name, ty, family, identity)

    def _update(self, value, chain: set):
        """The combining operator if `value` folds one element into a chain
        member (with an operand independent of the chain), else None."""
        if not isinstance(value, nir.Expr):
            return None
        if value.op in ("binop", "inplace_binop"):
            fn = value.fn
            lhs, rhs = value.lhs.name, value.rhs.name
            if fn in _ADDITIVE or fn in _MULTIPLICATIVE:
                commutes = fn not in _SUBTRACTIONS
                if lhs in chain and rhs not in chain and self._independent(rhs, chain):
                    return operator.add if fn in _ADDITIVE else operator.mul
                if commutes and rhs in chain and lhs not in chain and \
                        self._independent(lhs, chain):
                    return operator.add if fn in _ADDITIVE else operator.mul
            return None
        if value.op == "call" and len(value.args) == 2 and not value.kws:
            callee = self.body.callee(value.func.name)
            found = _CALLED.get(callee) if _hashable(callee) else None
            if found is None:
                return None
            op, first_only = found
            a, b = (arg.name for arg in value.args)
            float_ = isinstance(self.body.typeof(a), types.Float) or \
                isinstance(self.body.typeof(b), types.Float)
            if a in chain and b not in chain and self._independent(b, chain):
                return op
            if not (first_only and float_) and b in chain and a not in chain and \
                    self._independent(a, chain):
                return op
        return None

    def _independent(self, name: str, chain: set) -> bool:
        """Is `name` computed in this iteration without the chain's values?
        (It may be read from outside the loop.)"""
        seen, work = set(), [name]
        while work:
            current = work.pop()
            if current in chain:
                return False
            if current in seen:
                continue
            seen.add(current)
            for label, stmt in self.body.assigned.get(current, []):
                if label in self.labels:
                    work.extend(_names_read(stmt.value))
        return True

    def _value_independent(self, value, chain: set) -> bool:
        return all(self._independent(name, chain) for name in _names_read(value))

    def _select(self, name: str, chains: dict, uses: dict) -> Optional[SelectReduction]:
        """`name` as the key of `if cand <op> key: key = cand; p = v; ...`."""
        body = self.body
        key_chain = chains[name]
        compare = None
        for member in key_chain:
            for stmt, value in uses.get(member, []):
                if isinstance(value, nir.Expr) and value.op == "binop" \
                        and value.fn in _COMPARISONS:
                    if compare is not None:
                        return None
                    compare = (stmt, value)
        if compare is None:
            return None
        stmt, value = compare
        op = _COMPARISONS[value.fn]
        if value.lhs.name in key_chain:
            op, candidate = _FLIPPED[op], value.rhs.name
        else:
            candidate = value.lhs.name
        if value.rhs.name not in key_chain and value.lhs.name not in key_chain:
            return None
        if candidate in key_chain or not self._independent(candidate, key_chain):
            return None
        then_label = self._branch_on(stmt.target.name)
        if then_label is None:
            return None
        # the replacements: assignments in the taken block to chain members
        then_block = body.blocks[then_label]
        replaced = {}
        for inner in then_block.body:
            if isinstance(inner, nir.Assign):
                for carried, chain in chains.items():
                    if inner.target.name in chain and not (
                            isinstance(inner.value, nir.Var) and inner.value.name in chain):
                        replaced.setdefault(carried, []).append(inner)
        if name not in replaced or any(len(v) != 1 for v in replaced.values()):
            return None
        key_update = replaced[name][0]
        if not (isinstance(key_update.value, nir.Var) and key_update.value.name == candidate):
            return None
        group = [name] + sorted(n for n in replaced if n != name)
        members = set().union(*(chains[n] for n in group))
        replacements = {id(s) for v in replaced.values() for s in v}
        for member in members:
            for use_stmt, use_value in uses.get(member, []):
                copy = isinstance(use_stmt, nir.Assign) and isinstance(use_value, nir.Var) \
                    and use_stmt.target.name in members
                if not copy and use_stmt is not stmt:
                    return None
            for label, assign in body.assigned.get(member, []):
                if label not in self.labels:
                    continue
                if id(assign) in replacements:
                    if not self._value_independent(assign.value, members):
                        return None
                    continue
                if not (isinstance(assign.value, nir.Var) and assign.value.name in members):
                    return None
        types_ = [body.typeof(n) for n in group]
        if not all(isinstance(t, (types.Integer, types.Float, types.Boolean)) for t in types_) or \
                not isinstance(types_[0], (types.Integer, types.Float)):
            return None
        position = self._positions(key_chain, key_update)
        return SelectReduction(group + [position], types_ + [types.int64], op)

    def _branch_on(self, condition: str) -> Optional[int]:
        """The block taken when `condition` (or bool() of it) is true, if it
        is entered only from that branch."""
        names = {condition}
        for _, stmt in self._statements():
            if isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Expr) and \
                    stmt.value.op == "call" and len(stmt.value.args) == 1 and \
                    stmt.value.args[0].name in names:
                if self.body.callee(stmt.value.func.name) is bool:
                    names.add(stmt.target.name)
        for label in self.labels:
            last = self.body.blocks[label].body[-1]
            if isinstance(last, nir.Branch) and last.cond.name in names:
                taken = last.truebr
                preds = [p for p, _ in self.body.cfg.predecessors(taken)]
                return taken if preds == [label] and taken in self.labels else None
        return None

    def _positions(self, key_chain: set, key_update) -> str:
        """A hidden variable per key chain member holding the iteration that
        set the key (mirroring the key's assignments); returns the carried one."""
        body = self.body
        typemap = body.lw.typemap
        hidden = {member: f"{member}$position" for member in key_chain}
        for member in hidden.values():
            typemap[member] = types.int64
        for label in self.labels:
            for stmt in body.blocks[label].body:
                if not isinstance(stmt, nir.Assign) or stmt.target.name not in key_chain:
                    continue
                target = nir.Var(stmt.target.scope, hidden[stmt.target.name], stmt.loc)
                if stmt is key_update:
                    source = nir.Var(stmt.target.scope, self.index, stmt.loc)
                else:
                    source = nir.Var(stmt.target.scope, hidden[stmt.value.name], stmt.loc)
                self.extra.setdefault(id(stmt), []).append(nir.Assign(source, target, stmt.loc))
        carried = next(n for n in key_chain if n in body.live_map[self.header])
        return hidden[carried]

    # -- memory -----------------------------------------------------------------

    def _memory_is_independent(self) -> bool:
        body = self.body
        copies_of_index = self._copy_chain(self.index)
        loop_defined = set().union(*(body.defmap[label] for label in self.labels))

        def injective(store) -> bool:
            index = store.index if isinstance(store, nir.SetItem) else store.index_var
            return index is not None and self._injective(index.name, copies_of_index,
                                                         loop_defined)
        # the other writes are scatter updates (atomic), or the loop stays
        updates = {id(u.store): u for u in updates_in(
            body.lw, [body.blocks[label] for label in self.labels], body.uses())
            if not injective(u.store)}
        atomic_reads = {id(u.read) for u in updates.values()}
        writes, reads, atomic = {}, {}, {}
        for _, stmt in self._statements():
            if isinstance(stmt, Parfor) or isinstance(stmt, (nir.Print, nir.EnterWith)):
                return False
            if id(stmt) in updates:
                atomic.setdefault(stmt.target.name, set()).add(updates[id(stmt)].op)
                continue
            if isinstance(stmt, (nir.SetItem, nir.StaticSetItem)):
                if not injective(stmt):
                    return False
                index = stmt.index if isinstance(stmt, nir.SetItem) else stmt.index_var
                writes.setdefault(stmt.target.name, set()).add(self._index_key(index.name))
                continue
            if not isinstance(stmt, nir.Assign):
                continue
            value = stmt.value
            if isinstance(body.typeof(stmt.target.name), types.Array) and \
                    not (isinstance(value, nir.Expr) and value.op in ("getattr",)):
                return False        # makes an array or a view: not in a spread loop
            if isinstance(value, nir.Expr):
                if value.op == "call" and any(isinstance(body.typeof(a.name), types.Array)
                                              for a in value.args):
                    return False
                if value.op == "inplace_binop" and isinstance(body.typeof(value.lhs.name),
                                                              types.Array):
                    return False
                if value.op in ("getitem", "static_getitem") and id(stmt) not in atomic_reads:
                    index = value.index if value.op == "getitem" else value.index_var
                    key = self._index_key(index.name) if index is not None else \
                        ("static", repr(value.index))
                    reads.setdefault(value.value.name, set()).add(key)
        for array, keys in writes.items():
            if len(keys) != 1 or not reads.get(array, keys) <= keys:
                return False
        roots = {self._root(name) for name in writes}
        if len(roots) != len(writes):
            return False
        for array in reads:
            if array not in writes and self._root(array) in roots:
                return False
        atomic_roots = {self._root(name) for name in atomic}
        others = {self._root(name) for name in list(writes) + list(reads)}
        return all(len(ops) == 1 for ops in atomic.values()) and not atomic_roots & others

    def _injective(self, index: str, copies_of_index: set, loop_defined: set) -> bool:
        """Does the index name `index` hold the loop variable itself, alone
        or at some position of a tuple whose other items do not change?"""
        if index in copies_of_index:
            return True
        value = self.body.definition(index)
        if not (isinstance(value, nir.Expr) and value.op == "build_tuple"):
            return False
        items = [item.name for item in value.items]
        return any(item in copies_of_index for item in items) and all(
            item in copies_of_index or item not in loop_defined for item in items)

    def _index_key(self, index: str):
        """What an index computes, by name up to copies and tuple building."""
        value = self.body.definition(index)
        if isinstance(value, nir.Var):
            return self._index_key(value.name)
        if isinstance(value, nir.Expr) and value.op == "build_tuple":
            return tuple(self._index_key(item.name) for item in value.items)
        return index

    def _root(self, name: str) -> str:
        """The array a view is taken from, following views in the body."""
        seen = set()
        while name not in seen:
            seen.add(name)
            value = self.body.definition(name)
            if isinstance(value, nir.Var):
                name = value.name
            elif isinstance(value, nir.Expr) and value.op in ("getitem", "static_getitem",
                                                              "getattr"):
                name = value.value.name
            else:
                break
        return name


def _range_bounds(body: _Body, iterator: str) -> Optional[tuple]:
    """(start, stop, step) of `getiter(range(...))`, the arguments as Vars."""
    getiter = body.definition(iterator)
    if not (isinstance(getiter, nir.Expr) and getiter.op == "getiter"):
        return None
    call = body.definition(getiter.value.name)
    if not (isinstance(call, nir.Expr) and call.op == "call") or call.kws or call.vararg:
        return None
    if body.callee(call.func.name) is not range:
        return None
    args = list(call.args)
    if not 1 <= len(args) <= 3 or not all(isinstance(body.typeof(a.name), types.Integer)
                                          for a in args):
        return None
    if len(args) == 1:
        return 0, args[0], 1
    if len(args) == 2:
        return args[0], args[1], 1
    return tuple(args)


def _is_expr(stmt, op: str) -> bool:
    return isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Expr) and \
        stmt.value.op == op


def _names_read(value) -> list:
    if isinstance(value, nir.Var):
        return [value.name]
    if isinstance(value, nir.Expr):
        return [v.name for v in value.list_vars()]
    return []


def _hashable(obj) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _uses(statements) -> dict:
    """name -> [(statement, value read)] over the statements: the Expr that
    reads it (or the Var itself for a copy, or the statement for others)."""
    found: dict = {}
    for _, stmt in statements:
        if isinstance(stmt, nir.Assign):
            value = stmt.value
            readers = [value] if isinstance(value, nir.Var) else []
            if isinstance(value, nir.Expr):
                for var in value.list_vars():
                    found.setdefault(var.name, []).append((stmt, value))
                continue
            for var in readers:
                found.setdefault(var.name, []).append((stmt, var))
            continue
        for var in stmt.list_vars():
            found.setdefault(var.name, []).append((stmt, stmt))
    return found
