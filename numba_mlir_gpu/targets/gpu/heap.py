"""Arrays made inside GPU kernels on the device heap.

Where a kernel's arrays cannot be scratch slots sized before the launch
(scratch.py: a size that depends on the data, an array made by a called
function), the loop runs as a plain kernel (one thread per iteration, its
element loops in order) and `memref.alloc` stays inside it: the NVVM
lowering makes it a call of the CUDA device runtime's `malloc`, and buffer
deallocation puts the `free` in the same iteration (nothing a body makes
outlives it: returned arrays of called functions are freed by the caller's
iteration). The heap's size is the context's CU_LIMIT_MALLOC_HEAP_SIZE,
raised before the first launch of a module that calls `malloc`
(runtime/device.reserve_device_heap).

A NULL result for a non-empty array stores MemoryError, naming the source
line, in the status the host checks after the loop (the loop's status flag;
in a called function, the cell its caller passes: FunctionLowerer.heap_status),
and the thread ends (PTX `exit`), so nothing touches the missing array.
"""
from __future__ import annotations

import os

from ..._mlir import arith, ir, llvm, memref, scf
from ...lowering.build import cmpi, const_index

HEAP_ENV = "NUMBA_MLIR_GPU_DEVICE_HEAP_MB"
# on a module whose kernels allocate (compiler/jit.py reserves the heap)
HEAP_ATTRIBUTE = "numba_mlir_gpu.device_heap"
DEFAULT_HEAP_MB = 1024


def mark_kernels_that_allocate(module: ir.Module) -> None:
    """After the kernels' lowering to the LLVM dialect: a module whose
    kernels call `malloc` gets HEAP_ATTRIBUTE. Not only our arrays do: the
    deallocation clones an array a callee returns when it cannot tell whose
    it is (np.ptp's input: its argument, or a placeholder on the error
    path). Left at CUDA's default 8 MiB, stumpy's rolling np.ptp over
    windows of 100 held 2,901 threads' copies, not 5,901: `malloc` gave
    NULL and the copy faulted."""
    found = []

    def visit(op):
        if op.name == "llvm.call" and "callee" in op.attributes \
                and str(op.attributes["callee"]) == "@malloc":
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    for op in module.body.operations:
        if op.operation.name == "gpu.module":
            op.operation.walk(visit)
    if found:
        module.operation.attributes[HEAP_ATTRIBUTE] = ir.UnitAttr.get()


def heap_bytes() -> tuple[int, bool]:
    """The device heap to reserve and whether exactly that: the size
    $NUMBA_MLIR_GPU_DEVICE_HEAP_MB says, else at least DEFAULT_HEAP_MB (a
    larger limit set by another library stays; CUDA's default is 8 MiB)."""
    value = os.environ.get(HEAP_ENV, "").strip()
    if value:
        return int(value) << 20, True
    return DEFAULT_HEAP_MB << 20, False


def exhausted_message(loc) -> str:
    where = f"{os.path.basename(loc.filename)}:{loc.line}" if loc is not None else "a kernel"
    return (f"numba-mlir-gpu: the GPU device heap is exhausted: an array made at {where} inside "
            f"a GPU kernel could not be allocated (raise ${HEAP_ENV}, or make fewer or smaller "
            "arrays per iteration)")


def check_allocation(lw, buffer: ir.Value, extents: list) -> None:
    """After `buffer = memref.alloc(...)` in a kernel: NULL for a non-empty
    array -> MemoryError in the status, and the thread ends."""
    lw.allocates_on_device = True
    lw.mlower.module.operation.attributes[HEAP_ATTRIBUTE] = ir.UnitAttr.get()
    pointer = memref.ExtractAlignedPointerAsIndexOp(buffer).result
    failed = cmpi("eq", pointer, const_index(0))
    count = const_index(1)
    for extent in extents:
        count = arith.MulIOp(count, extent).result
    failed = arith.AndIOp(failed, cmpi("ne", count, const_index(0))).result
    branch = scf.IfOp(failed)
    with ir.InsertionPoint(branch.then_block):
        code = lw.errors.code(MemoryError, (exhausted_message(lw.loc),))
        memref.StoreOp(code, lw.heap_status(), [])
        end_thread()
        scf.YieldOp([])


def end_thread() -> None:
    """PTX `exit`: the thread ends here (a memory clobber keeps the status
    store before it)."""
    llvm.InlineAsmOp(None, [], "exit;", "~{memory}", has_side_effects=True)
