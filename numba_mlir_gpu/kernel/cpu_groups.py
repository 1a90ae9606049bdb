"""CPU work-groups of kernels with barriers or group collectives.

The kernel function (body.py) is rewritten in place into a function run
once per work-group, whose items take turns between barriers: the function
is cut at each barrier, and each piece (a "region": from the function's
start or a barrier to the next barrier or return, any control flow in
between) runs for every item of the group, in order of flattened local id,
before the next piece runs. Which piece comes next is the item's choice at
its barrier, the same for every item (checks.py refuses barriers under
id-dependent control flow), so barriers in loops of uniform trip count work.

Per item state: the function's scalar variables are rank-0 slots
(function.py); each becomes an array of one slot per item, indexed by the
running item. Local arrays are allocated once (the function's entry runs
once per group); private arrays get a slice per item of one buffer (their
view made again in each block that uses them).
A value other than these that lives across a barrier (a view of an array,
say) is refused, naming the kernel.

Group collectives and shuffles (rules.py) are a store to an exchange
buffer, a barrier, and reads of it: the same cut.
"""
from __future__ import annotations

from .._mlir import arith, cf, func, ir, memref
from ..lowering.build import cmpi, const_index
from ..lowering.errors import UnsupportedConstructError
from .body import ID_KINDS, group_extent

EXIT = -1


def _top_block(op, fn_op):
    """The block of `fn_op`'s body that holds `op` (possibly nested)."""
    op = op.operation
    while True:
        parent = op.parent.operation
        if parent == fn_op:
            return op.block
        op = parent


def rewrite(fn: "func.FuncOp", nflat: int, barrier_symbol: str, loc,
            private_arrays=()) -> None:
    """Rewrite the kernel function `fn` (flat args, then ID_KINDS x 3) into
    the work-group function. Its local and global id parameters are then
    unused (the launch passes zeros and the group's first ids)."""
    fn_op = fn.operation
    region = fn.regions[0]
    entry = region.blocks[0]
    args = list(entry.arguments)
    ids = {kind: args[nflat + 3 * k:nflat + 3 * k + 3] for k, kind in enumerate(ID_KINDS)}
    index = ir.IndexType.get()

    # 1. cut the blocks at the barrier markers
    entries = []                    # region entry blocks after barriers, in state order
    cuts = []                       # the branch each cut leaves
    blocks = list(region.blocks)
    for block in blocks:
        current = block
        ops = list(block.operations)
        k = 0
        while k < len(ops):
            op = ops[k]
            if op.operation.name == "func.call" and \
                    ir.FlatSymbolRefAttr(op.operation.attributes["callee"]).value == barrier_symbol:
                after = current.create_after()
                for rest in ops[k + 1:]:
                    after.append(rest.operation)
                with ir.InsertionPoint(current), ir.Location.unknown():
                    branch = cf.BranchOp([], after)
                op.operation.erase()
                entries.append(after)
                cuts.append(branch)
                current = after
                ops = ops[k + 1:]
                k = 0
                continue
            k += 1

    # 2. entry: the group's state slots; count of items
    first_branch = list(entry.operations)[-1]
    with ir.InsertionPoint.at_block_begin(entry), ir.Location.unknown():
        count = arith.MulIOp(arith.MulIOp(ids["extent"][0], ids["extent"][1]).result,
                             ids["extent"][2]).result
    state_slot, next_slot, item_slot = [_slot(entry, index) for _ in range(3)]
    scalar_slots = [op for op in entry.operations
                    if op.operation.name == "memref.alloca" and
                    ir.MemRefType(op.results[0].type).rank == 0 and
                    op.results[0] not in (state_slot, next_slot, item_slot)]

    head = entry.create_after()
    items = head.create_after()
    dispatch = items.create_after()
    next_round = dispatch.create_after()
    finish = next_round.create_after()
    first_target = first_branch.operation.successors[0]
    first_operands = list(first_branch.operation.operands)
    first_branch.operation.erase()
    with ir.InsertionPoint(entry), ir.Location.unknown():
        memref.StoreOp(const_index(0), state_slot, [])
        cf.BranchOp([], head)
    with ir.InsertionPoint(head), ir.Location.unknown():
        state = memref.LoadOp(state_slot, []).result
        memref.StoreOp(const_index(0), item_slot, [])
        cf.CondBranchOp(cmpi("eq", state, const_index(EXIT)), [], [], finish, items)
    with ir.InsertionPoint(items), ir.Location.unknown():
        item = memref.LoadOp(item_slot, []).result
        cf.CondBranchOp(cmpi("ult", item, count), [], [], dispatch, next_round)
    with ir.InsertionPoint(next_round), ir.Location.unknown():
        memref.StoreOp(memref.LoadOp(next_slot, []).result, state_slot, [])
        cf.BranchOp([], head)
    status_type = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results
    with ir.InsertionPoint(finish), ir.Location.unknown():
        func.ReturnOp([arith.ConstantOp(t, 0).result for t in status_type])
    with ir.InsertionPoint(dispatch), ir.Location.unknown():
        state = memref.LoadOp(state_slot, []).result
    _dispatch_chain(dispatch, state, first_target, first_operands, entries)

    def done_with(op, next_state: int) -> None:
        with ir.InsertionPoint(op), ir.Location.unknown():
            memref.StoreOp(const_index(next_state), next_slot, [])
            item = memref.LoadOp(item_slot, []).result
            memref.StoreOp(arith.AddIOp(item, const_index(1)).result, item_slot, [])
            cf.BranchOp([], items)
        op.erase()

    for k, branch in enumerate(cuts):
        done_with(branch.operation, k + 1)
    control = {entry, head, items, dispatch, next_round, finish}
    for block in list(region.blocks):
        if block in control:
            continue
        for op in list(block.operations):
            if op.operation.name == "func.return":
                done_with(op.operation, EXIT)

    # 3. per-item slots and ids, in every block of the regions
    per_block: dict = {}

    def block_values(block):
        key = block
        if key not in per_block:
            with ir.InsertionPoint.at_block_begin(block), ir.Location.unknown():
                item = memref.LoadOp(item_slot, []).result
                size = ids["extent"]
                lid0 = arith.RemUIOp(item, size[0]).result
                rest = arith.DivUIOp(item, size[0]).result
                lid1 = arith.RemUIOp(rest, size[1]).result
                lid2 = arith.DivUIOp(rest, size[1]).result
                local = [lid0, lid1, lid2]
                global_ = [arith.AddIOp(arith.MulIOp(g, s).result, l).result
                           for g, s, l in zip(ids["group"], ids["local_size"], local)]
            per_block[key] = (item, local, global_)
        return per_block[key]

    for slot_op in scalar_slots:
        old = slot_op.results[0]
        ty = ir.MemRefType(old.type)
        with ir.InsertionPoint(slot_op), ir.Location.unknown():
            wide = memref.AllocaOp(ir.MemRefType.get([ir.ShapedType.get_dynamic_size()],
                                                     ty.element_type), [count], []).result
        for use in list(old.uses):
            owner = use.owner.operation
            name = owner.name
            if name not in ("memref.load", "memref.store"):
                raise UnsupportedConstructError(
                    f"a variable used as {name} in a kernel with barriers on the CPU target", loc)
            block = _top_block(owner, fn_op)
            item = block_values(block)[0]
            operands = list(owner.operands)
            with ir.InsertionPoint(owner), ir.Location.unknown():
                if name == "memref.load":
                    new = memref.LoadOp(wide, [item]).result
                    owner.results[0].replace_all_uses_with(new)
                else:
                    memref.StoreOp(operands[0], wide, [item])
            owner.erase()
        slot_op.operation.erase()
    for view, nbytes in private_arrays:
        _slice_per_item(view, nbytes, entry, count, fn_op, block_values, ids["extent"])
    for kind, which in (("local", 1), ("global", 2)):
        for d, arg in enumerate(ids[kind]):
            for use in list(arg.uses):
                owner = use.owner.operation
                if owner.parent is None:
                    continue
                block = _top_block(owner, fn_op)
                if block in control:
                    continue
                owner.operands[use.operand_number] = block_values(block)[which][d]
    try:
        fn_op.verify()
    except ir.MLIRError as exc:
        import os
        if os.environ.get("NMG_KDEBUG"):
            print(exc)
            print(fn_op.get_asm(print_generic_op_form=False, assume_verified=True))
        raise UnsupportedConstructError(
            "a value other than a scalar variable, a local or a private array (an array view, "
            "a tuple of arrays) that lives across a barrier or group operation, on the CPU "
            "target", loc) from None


def _slice_per_item(view, nbytes: int, entry, count, fn_op, block_values, size) -> None:
    """A private array's view moved onto the running item's slice of one
    buffer of count x nbytes (allocated at the function's top); where the
    array is used in another block (after a barrier), the view is made
    again there, for the item running then."""
    with ir.InsertionPoint.at_block_terminator(entry), ir.Location.unknown():
        total = arith.MulIOp(count, const_index(nbytes)).result
        buffer = memref.AllocaOp(ir.MemRefType.get([ir.ShapedType.get_dynamic_size()],
                                                   ir.IntegerType.get_signless(8)),
                                 [total], []).result

    def offset_before(op):
        local = block_values(_top_block(op, fn_op))[1]
        with ir.InsertionPoint(op), ir.Location.unknown():
            flat = arith.AddIOp(local[0], arith.MulIOp(size[0], arith.AddIOp(
                local[1], arith.MulIOp(size[1], local[2]).result).result).result).result
            return arith.MulIOp(flat, const_index(nbytes)).result

    op = view.operation
    home = _top_block(op, fn_op)
    op.operands[0] = buffer
    op.operands[1] = offset_before(op)
    for cast_use in list(op.results[0].uses):
        cast = cast_use.owner.operation
        for use in list(cast.results[0].uses):
            owner = use.owner.operation
            if _top_block(owner, fn_op) == home:
                continue
            offset = offset_before(owner)
            with ir.InsertionPoint(owner), ir.Location.unknown():
                again = memref.ViewOp(op.results[0].type, buffer, offset, []).result
                again = memref.CastOp(cast.results[0].type, again).result
            owner.operands[use.operand_number] = again


def _slot(entry, ty):
    with ir.InsertionPoint.at_block_begin(entry), ir.Location.unknown():
        return memref.AllocaOp(ir.MemRefType.get([], ty), [], []).result


def _dispatch_chain(block, state, first_target, first_operands, entries) -> None:
    """Branch on `state`: 0 -> the function's first block, k -> entries[k-1]."""
    targets = [(first_target, first_operands)] + [(b, []) for b in entries]
    current = block
    for k, (target, operands) in enumerate(targets[:-1]):
        nxt = current.create_after()
        with ir.InsertionPoint(current), ir.Location.unknown():
            cf.CondBranchOp(cmpi("eq", state, const_index(k)), operands, [], target, nxt)
        current = nxt
    with ir.InsertionPoint(current), ir.Location.unknown():
        cf.BranchOp(targets[-1][1], targets[-1][0])


def run_groups(lw, name, flat, results, context, global_size, local_size, groups):
    """The CPU launch of a kernel with barriers: the work-group function
    once per group, groups in parallel."""
    from .rules import CPU_BARRIER
    fn = _find_function(lw.mlower.module, name)
    rewrite(fn, len(flat), CPU_BARRIER, context.barriers[0], context.private_arrays)
    zero = const_index(0)

    def per_group(indices, accs):
        group_id = list(reversed(indices))
        first = [arith.MulIOp(g, s).result for g, s in zip(group_id, local_size)]
        ids = {"global": first, "local": [zero] * 3, "group": group_id,
               "global_size": global_size, "local_size": local_size, "num_groups": groups,
               "extent": group_extent(first, local_size, global_size)}
        func.CallOp(results, name, flat + [v for kind in ID_KINDS for v in ids[kind]])
        return []
    lw.target.parallel_loop(lw, list(reversed(groups)), per_group, [])


def _find_function(module, name: str):
    for op in module.body.operations:
        if op.operation.name == "func.func" and \
                ir.StringAttr(op.operation.attributes["sym_name"]).value == name:
            return op
    raise KeyError(name)
