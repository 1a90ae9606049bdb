"""Give every loop exit that joins other paths a block of its own, so that
Numba's parfor reduction analysis sees reductions updated in such loops.

The bug (Numba 0.68.1 with Python 3.11): in

    for i in prange(n):
        if c:
            for j in range(m):
                q += 3

Python 3.11 bytecode sends the inner loop's exit edge (from its header, the
`FOR_ITER` block) straight to the block where the `if` joins, which the
`if`'s other edge reaches too. That block has a phi of `q`, and
PreLowerStripPhis puts the phi's incoming copy (`q.4 = q.2`) in the inner
loop's *header*. `get_parfor_reductions` (numba/parfors/parfor.py, the
backward walk at lines 3805-3825) visits the parfor's blocks once, in reverse
topological order, and follows only variables already known to flow into the
reduction variable: the inner loop's body, which comes after its header in
that order, is visited before the copy that ties `q.2` to the reduction, so
the update `q.1 = q.2 + 3; q.2 = q.1` is never collected. Only copies are
left, `get_reduce_nodes` finds no operator and returns None, and lines
3838-3845 then take `q` for "ill-formed Python", not a reduction: it becomes
a race, private to each iteration, and the loop returns `q`'s initial value.
Numba's own parallel=True gives the same wrong value.

Python 3.12 ends a `for` loop with an `END_FOR` instruction, which starts a
block of its own: the exit edge goes header -> END_FOR block -> join, the
copy lands in the END_FOR block, which the walk visits before the loop's
body, and the reduction is found. This pass makes Python 3.11's IR take that
shape: it splits each edge that leaves a loop for a block with several
predecessors with an empty block, before the phis are stripped.

What order the walk needs. The update reaches the join only through the
loop's back edge: `q.1 = q.2 + 3` and the latch's copy `q.2 = q.1` come
before the exit's copy `q.4 = q.2` in no topological order, so the walk (which
needs each use met before its definitions) collects them only if the block
holding the exit's copy comes *after* the latch in `find_topo_order`. That
order is a reversed DFS post-order in which a branch's false target is
explored first: a block reached only by the exit edge, on the false side of a
block that dominates the loop's body, is finished before any block of the
body is found, so it comes after all of them. The split block is such a
block; a join that other paths reach first is not (its place is set by those
paths). Hence two rules:

* every exit edge is split, from whatever block of the loop it leaves, not
  only from the header: a `for` loop whose body is long enough needs an
  `EXTENDED_ARG` before its `FOR_ITER`, the back edge then targets that
  instruction's block (the header holds only the phis and jumps on) and the
  exit leaves from the `FOR_ITER` block after it (found by a generated program,
  the `long_inner_body` test);
* a loop left only by true edges (`while True: ... if c: break`) has those
  branches inverted (`not c`, targets swapped) so that an exit is a false
  edge. Numba loses that reduction even with no join (`while_true_break`).

A loop left from a block that does not dominate its latch only (a `break`
under a further `if` of a `while True` body) can still defeat the walk; the
generator makes no `while` loops and every `for` loop has its `FOR_ITER` exit.
An empty block and a negated, swapped branch change no result, whatever the
Numba or Python version; where the IR already has the shape, the pass finds
nothing to do.
"""
from __future__ import annotations

import operator

from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.ir_utils import _the_max_label, build_definitions, mk_unique_var, next_label


def _exit_edges(blocks, loop):
    """(source, attr, target) for each branch edge that leaves `loop`."""
    for label in sorted(loop.body):
        term = blocks[label].terminator
        if not isinstance(term, ir.Branch) or term.truebr == term.falsebr:
            continue
        for attr in ("truebr", "falsebr"):
            target = getattr(term, attr)
            if target not in loop.body:
                yield label, attr, target


def _invert_branch(block, typemap, calltypes, typingctx) -> bool:
    """`branch c, T, F` -> `$c_not = not c; branch $c_not, F, T` where c is a
    boolean; False (nothing changed) otherwise."""
    term = block.terminator
    if typemap is None or typemap.get(term.cond.name) != types.boolean:
        return False
    loc = term.loc
    neg = ir.Var(block.scope, mk_unique_var("$loop_exit_not"), loc)
    expr = ir.Expr.unary("not", term.cond, loc)
    typemap[neg.name] = types.boolean
    calltypes[expr] = typingctx.resolve_function_type(operator.not_, (types.boolean,), {})
    block.insert_before_terminator(ir.Assign(expr, neg, loc))
    term.cond = neg
    term.truebr, term.falsebr = term.falsebr, term.truebr
    return True


def split_loop_exit_edges(func_ir: ir.FunctionIR, typemap=None, calltypes=None,
                          typingctx=None) -> int:
    """Make every loop exit a branch's false edge where it can (a loop left
    only by true edges, `while True: ... if c: break`, has those branches
    inverted when their condition is a boolean and the types are given), then
    put an empty block on every edge that leaves a loop, from any block of the
    loop, for a block that has other predecessors too; the join's phis take
    their value from the new block. Returns how many edges were changed."""
    blocks = func_ir.blocks
    cfg = compute_cfg_from_blocks(blocks)
    changed = 0
    if typingctx is not None:
        inverted = set()
        for loop in cfg.loops().values():
            exits = list(_exit_edges(blocks, loop))
            if exits and all(attr == "truebr" for _, attr, _ in exits):
                for source, _, _ in exits:
                    if source not in inverted and _invert_branch(blocks[source], typemap,
                                                                 calltypes, typingctx):
                        inverted.add(source)
                        changed += 1
    edges = []
    for loop in cfg.loops().values():
        for source, attr, target in _exit_edges(blocks, loop):
            if len(list(cfg.predecessors(target))) >= 2 and (source, attr) not in edges:
                edges.append((source, attr))
    _the_max_label.update(max(blocks))      # fresh labels above every existing one
    for source, attr in edges:
        term = blocks[source].terminator
        target = getattr(term, attr)
        label = next_label()
        block = ir.Block(blocks[source].scope, term.loc)
        block.append(ir.Jump(target, term.loc))
        blocks[label] = block
        setattr(term, attr, label)
        for phi in blocks[target].find_exprs("phi"):
            phi.incoming_blocks = [label if b == source else b for b in phi.incoming_blocks]
    changed += len(edges)
    if changed:
        func_ir._definitions = build_definitions(blocks)
    return changed


@register_pass(mutates_CFG=True, analysis_only=False)
class SplitLoopExitEdges(FunctionPass):
    """split_loop_exit_edges before PreLowerStripPhis (typed_ir.typed_passes)."""

    _name = "numba_mlir_gpu_split_loop_exit_edges"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state) -> bool:
        return split_loop_exit_edges(state.func_ir, state.typemap, state.calltypes,
                                     state.typingctx) > 0
