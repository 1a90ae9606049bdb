"""Where each array of a GPU module lives, and which launches must wait.

Runs on the host code after the whole GPU pipeline (LLVM dialect, with
`gpu.launch_func` still an op). For each allocation it follows the pointer
through the host code (descriptor structs, pointer arithmetic) and looks at
what uses it:

* only kernels, frees and copies: device memory from the stream-ordered pool;
* also returned by the entry: the same when results stay on the GPU (the
  call got device arrays), else managed memory prefetched to the GPU, which
  the caller then reads on the host;
* read or written by host code, or anything not understood: managed memory,
  as before.

Calls of a GPU library on the same stream (cuBLAS's gemm: `gpu_calls`) count
as kernels: their pointer operands are device uses, and they are waited for
as launches are.

Copies that involve an allocation become `cuMemcpy` (`nmg_memcpy`), so a
NumPy argument's mirror is filled and read back over the bus once, and needs
no host access. Every launch goes to the legacy default stream; the entry
function waits for it after a launch only where host code may touch memory
before the function returns (the Numba wrapper waits at the end when the
caller will read the results on the host).
"""
from __future__ import annotations

from .._mlir import ir
from . import device

_ALLOC = "_mlir_memref_to_llvm_alloc"
_FREE = "_mlir_memref_to_llvm_free"

# Ops that only compute with a pointer (the result carries it on).
_CARRY = {"llvm.insertvalue", "llvm.getelementptr", "llvm.bitcast", "llvm.addrspacecast",
          "llvm.inttoptr", "llvm.ptrtoint", "llvm.select", "llvm.add", "llvm.sub",
          "llvm.mul", "llvm.and", "llvm.or", "llvm.xor", "llvm.urem", "llvm.udiv"}
# Ops that look at a pointer's value without touching the memory.
_INSPECT = {"llvm.icmp"}
# Calls that only pass the pointer to the GPU runtime.
_RUNTIME_CALLS = {_FREE, "nmg_memcpy", "nmg_free"}
_MEMCPY = {"llvm.intr.memcpy", "llvm.intr.memmove"}

# What the host code may do after a launch without waiting for it.
_PURE_PREFIXES = ("llvm.mlir.", "arith.")
_PURE = _CARRY | _INSPECT | {"llvm.extractvalue", "llvm.icmp", "llvm.trunc", "llvm.zext",
                             "llvm.sext", "llvm.sdiv", "llvm.srem", "llvm.shl", "llvm.lshr",
                             "llvm.ashr", "llvm.alloca", "gpu.launch_func", "llvm.fadd",
                             "llvm.fsub", "llvm.fmul", "llvm.fdiv", "llvm.frem", "llvm.fneg",
                             "llvm.fcmp", "llvm.fpext", "llvm.fptrunc", "llvm.sitofp",
                             "llvm.uitofp", "llvm.fptosi", "llvm.fptoui"}
# Intrinsics that touch memory; the others (min, max, fabs, sqrt...) only compute.
_MEMORY_INTRINSICS = _MEMCPY | {"llvm.intr.memset", "llvm.intr.memcpy.inline",
                                "llvm.intr.memset.inline", "llvm.intr.prefetch"}
_ORDERED_CALLS = {_FREE, _ALLOC, "nmg_memcpy", "nmg_alloc_device", "nmg_alloc_managed",
                  "nmg_alloc_managed_on_device"}


def callee(op) -> str | None:
    if op.name != "llvm.call" or "callee" not in op.attributes:
        return None
    return str(op.attributes["callee"]).lstrip("@")


def _functions(module: ir.Module):
    for op in module.body.operations:
        op = op.operation
        if op.name == "llvm.func" and len(op.regions[0].blocks) > 0:
            yield op


def _walk_ops(fn):
    for block in fn.regions[0].blocks:
        for op in block.operations:
            yield op.operation


class _Uses:
    """How host code uses one allocation."""

    def __init__(self):
        self.host = False
        self.returned = False


def _classify(alloc, entry: bool, gpu_calls: frozenset) -> _Uses:
    uses, seen, work = _Uses(), set(), [alloc.result]
    while work and not uses.host:
        value = work.pop()
        for use in value.uses:
            op = use.owner
            op = op.operation
            name = op.name
            if name in _CARRY:
                _push(op.results, seen, work)
            elif name == "llvm.extractvalue":
                if "ptr" in str(op.results[0].type):
                    _push(op.results, seen, work)
            elif name in _INSPECT or name == "gpu.launch_func" or name in _MEMCPY:
                pass
            elif name == "llvm.call" and (callee(op) in _RUNTIME_CALLS or
                                          callee(op) in gpu_calls):
                pass
            elif name in ("llvm.br", "llvm.cond_br"):
                _push([_block_argument(op, use.operand_number)], seen, work)
            elif name == "llvm.return" and entry:
                uses.returned = True
            else:       # loads, stores, other calls: host code
                uses.host = True
                break
    return uses


def _block_argument(branch, operand: int):
    """The successor's block argument that a branch operand is passed to."""
    if branch.name == "llvm.br":
        return branch.successors[0].arguments[operand]
    _, on_true, _ = _segments(branch)            # cond_br: condition, true, false operands
    if operand <= on_true:
        return branch.successors[0].arguments[operand - 1]
    return branch.successors[1].arguments[operand - 1 - on_true]


def _push(values, seen: set, work: list) -> None:
    for v in values:
        key = v.get_name() if hasattr(v, "get_name") else id(v)
        if key not in seen:
            seen.add(key)
            work.append(v)


def place_memory(module: ir.Module, entry: str, device_results: bool,
                 gpu_calls: frozenset = frozenset()) -> None:
    """Rewrite the GPU module's host code (see the module docstring)."""
    with module.context, ir.Location.unknown():
        _declare_runtime(module)
        for fn in _functions(module):
            if fn.attributes["sym_name"].value.startswith("nmg_"):
                continue
            is_entry = fn.attributes["sym_name"].value == entry
            _place_allocations(fn, is_entry, device_results, gpu_calls)
            _copies_through_driver(fn)
            _launch_on_default_stream(fn, is_entry, gpu_calls)


def _declare_runtime(module: ir.Module) -> None:
    present = {op.operation.attributes["sym_name"].value for op in module.body.operations
               if op.operation.name == "llvm.func"}
    decls = ir.Module.parse(device.declarations())
    for op in list(decls.body.operations):
        if op.operation.attributes["sym_name"].value not in present:
            module.body.append(op.detach_from_parent())


def _redirect(call, name: str) -> None:
    call.attributes["callee"] = ir.FlatSymbolRefAttr.get(name)


def _place_allocations(fn, is_entry: bool, device_results: bool, gpu_calls: frozenset) -> None:
    for op in list(_walk_ops(fn)):
        if callee(op) != _ALLOC:
            continue
        uses = _classify(op, is_entry, gpu_calls)
        if uses.host:
            _redirect(op, "nmg_alloc_managed")
        elif uses.returned and not device_results:
            _redirect(op, "nmg_alloc_managed_on_device")
        else:
            _redirect(op, "nmg_alloc_device")


def _copies_through_driver(fn) -> None:
    """memcpy with a GPU-allocated side -> cuMemcpy (any pair of pointers)."""
    for op in list(_walk_ops(fn)):
        if op.name not in _MEMCPY:
            continue
        if not any(_from_allocation(v) for v in list(op.operands)[:2]):
            continue
        dst, src, size = list(op.operands)[:3]
        with ir.InsertionPoint(op), op.location:
            ir.Operation.create("llvm.call", operands=[dst, src, size],
                                attributes={"callee": ir.FlatSymbolRefAttr.get("nmg_memcpy"),
                                            **_call_segments(3)})
        op.erase()


def _call_segments(n: int) -> dict:
    return {"operandSegmentSizes": ir.DenseI32ArrayAttr.get([n, 0]),
            "op_bundle_sizes": ir.DenseI32ArrayAttr.get([])}


def _from_allocation(value, depth: int = 0) -> bool:
    """Does this pointer come from an allocation (through pointer arithmetic
    and descriptor fields)?"""
    if depth > 16:
        return False
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)):
        return False          # a block argument: a caller's pointer
    op = owner.operation
    if op.name == "llvm.call":
        return (callee(op) or "").startswith(("nmg_alloc", _ALLOC))
    # The same ops _classify follows: an over-aligned allocation (complex
    # elements) reaches its copies through ptrtoint/add/urem/sub/inttoptr,
    # and a copy missed here stays a host memcpy into device memory.
    if op.name in _CARRY or op.name == "llvm.extractvalue":
        return any(_from_allocation(v, depth + 1) for v in op.operands)
    return False


def _launch_on_default_stream(fn, is_entry: bool, gpu_calls: frozenset) -> None:
    """Each launch gets the NULL stream as its async object (no stream made
    and destroyed per launch); a wait follows it, and each library call,
    unless, on every path, only GPU work comes before the entry returns or
    before a later wait."""
    # last launch first: a wait placed after a later launch also covers the
    # earlier ones (the stream runs in order)
    for op in reversed(list(_walk_ops(fn))):
        if op.name == "llvm.call" and callee(op) in gpu_calls:
            if not (is_entry and _only_gpu_work_follows(op, gpu_calls)):
                _insert_after(op, "nmg_sync")
            continue
        if op.name != "gpu.launch_func" or _has_stream(op):
            continue
        with ir.InsertionPoint(op), op.location:
            null = ir.Operation.create("llvm.mlir.zero", results=[ir.Type.parse("!llvm.ptr")])
            launch = _with_stream(op, null.results[0])
        op.erase()
        if not (is_entry and _only_gpu_work_follows(launch, gpu_calls)):
            _insert_after(launch, "nmg_sync")


def _segments(op) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def _has_stream(op) -> bool:
    return _segments(op)[-1] > 0


def _with_stream(op, stream):
    segments = _segments(op)
    segments[-1] = 1
    attrs = {name: op.attributes[name] for name in op.attributes}
    attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(segments)
    return ir.Operation.create(op.name, results=[r.type for r in op.results],
                               operands=list(op.operands) + [stream], attributes=attrs,
                               loc=op.location)


def _insert_after(op, name: str) -> None:
    nxt = _next_op(op)
    with ir.InsertionPoint(nxt), op.location:
        ir.Operation.create("llvm.call", operands=[],
                            attributes={"callee": ir.FlatSymbolRefAttr.get(name),
                                        **_call_segments(0)})


def _next_op(op):
    found = False
    for other in op.block.operations:
        if found:
            return other.operation
        found = other.operation == op
    raise AssertionError("a launch is never a block's terminator")


def _only_gpu_work_follows(launch, gpu_calls: frozenset) -> bool:
    """Can the entry return before host code touches memory, on every path
    from this launch?"""
    seen: set = set()

    def safe_from(block, start) -> bool:
        ops = [o.operation for o in block.operations]
        i = ops.index(start) + 1 if start is not None else 0
        for op in ops[i:]:
            name = op.name
            if name == "llvm.return" or (name == "llvm.call" and callee(op) == "nmg_sync"):
                return True
            if name in ("llvm.br", "llvm.cond_br"):
                for succ in op.successors:
                    key = str(succ)
                    if key in seen:
                        continue
                    seen.add(key)
                    if not safe_from(succ, None):
                        return False
                return True
            if name in _PURE or name.startswith(_PURE_PREFIXES):
                continue
            if name.startswith("llvm.intr.") and name not in _MEMORY_INTRINSICS:
                continue
            if name == "llvm.call" and (callee(op) in _ORDERED_CALLS or
                                        callee(op) in gpu_calls):
                continue
            if name in ("llvm.load", "llvm.store") and _on_stack(op):
                continue
            return False
        return False
    return safe_from(launch.block, launch)


def _on_stack(op) -> bool:
    """Does the load or store address a stack slot (through element offsets)?"""
    address = op.operands[0] if op.name == "llvm.load" else op.operands[1]
    while True:
        owner = address.owner
        if not isinstance(owner, (ir.Operation, ir.OpView)):
            return False
        owner = owner.operation
        if owner.name != "llvm.getelementptr":
            return owner.name == "llvm.alloca"
        address = owner.operands[0]
