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
shape: it splits each edge from a loop header to a block with several
predecessors with an empty block, before the phis are stripped. An empty
block changes no result, whatever the Numba or Python version; where the IR
already has the shape, the pass finds nothing to split.
"""
from __future__ import annotations

from numba.core import ir
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.ir_utils import _the_max_label, build_definitions, next_label


def split_loop_exit_edges(func_ir: ir.FunctionIR) -> int:
    """Put an empty block on every edge from a loop header to a block outside
    the loop that has other predecessors too; the join's phis take their
    value from the new block. Returns how many edges were split."""
    blocks = func_ir.blocks
    cfg = compute_cfg_from_blocks(blocks)
    _the_max_label.update(max(blocks))      # fresh labels above every existing one
    split = 0
    for loop in cfg.loops().values():
        header = blocks[loop.header]
        term = header.terminator
        if not isinstance(term, ir.Branch):
            continue
        for attr in ("truebr", "falsebr"):
            target = getattr(term, attr)
            if target in loop.body or len(list(cfg.predecessors(target))) < 2:
                continue
            label = next_label()
            # The new block keeps the branch's side (a for loop's exit is its
            # false edge): the topological order then puts it after the loop's
            # body, where the reduction analysis needs the phi's copy.
            block = ir.Block(header.scope, term.loc)
            block.append(ir.Jump(target, term.loc))
            blocks[label] = block
            setattr(term, attr, label)
            for phi in blocks[target].find_exprs("phi"):
                phi.incoming_blocks = [label if b == loop.header else b
                                       for b in phi.incoming_blocks]
            split += 1
    if split:
        func_ir._definitions = build_definitions(blocks)
    return split


@register_pass(mutates_CFG=True, analysis_only=False)
class SplitLoopExitEdges(FunctionPass):
    """split_loop_exit_edges before PreLowerStripPhis (typed_ir.typed_passes)."""

    _name = "numba_mlir_gpu_split_loop_exit_edges"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state) -> bool:
        return split_loop_exit_edges(state.func_ir) > 0
