"""The MLIR pass pipelines, all in one place, as textual pipelines.

Both targets share the front part (promote slots to SSA, free temporaries);
they differ in how parallel loops are run and in the memory allocator that
`memref.alloc` calls (`_mlir_memref_to_llvm_alloc`, defined by jit.add_allocator in
each module: malloc on the CPU, CUDA managed memory on the GPU).
"""
from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass

from .._mlir import func, ir, llvm
from ..lowering.build import declare_function
from ..lowering.fastmath import allows_approximate_functions, operation_flags
from ..lowering.structured import generics, lower_as_loops
from ..targets.gpu import schedules
from ..targets.gpu.early_loads import issue_loads_early
from ..targets.gpu.heap import mark_kernels_that_allocate
from ..targets.gpu.reduce import BARRIER_MARKER
from ..targets.gpu.structured import schedule_reductions
from .atomics import compare_exchanges, fences
from .constant_slots import fold_constant_scalar_buffers
from .dead_loops import erase_dead_loops
from .invariant_divisions import hoist_invariant_divisions
from .deallocation import (copies_of_views_as_loops, fresh_results_not_cloned,
                           lower_general_deallocs)
from .deallocation import inside as _inside
from .deallocation import operations as _ops
from .division import reciprocal_division_in_kernels
from .fp64 import truncate_fp64
from .gpu_binaries import assemble, ptx_features
from .launch import TileParallelLoops
from .narrow_counters import narrow_while_counters
from .nonnegative import drop_wraparound_of_nonnegative_indices
from .toolkit import find_toolkit

# Cleanup after lowering: slots to SSA values, then free every temporary
# array that is not returned (returned arrays are owned by the caller). This
# is upstream's buffer-deallocation-pipeline, with the general dealloc case
# lowered by deallocation.py. Ownership-based deallocation needs structured
# loops, hence lift-cf-to-scf; the normal and error returns it joins would
# have every returned array copied (deallocation.fresh_results_not_cloned).
# The first cse removes dead code before the canonicalizer sees it: its
# rewriter asserts when it erases a dead loop whose body is a multi-block
# region (a dead reduction in an inner loop with two `continue`s,
# generated-program seed 1009692), cse's own erasure does not.
_DEALLOCATION = [
    "builtin.module(func.func(mem2reg,cse))",
    erase_dead_loops,       # before canonicalize, which aborted erasing some (dead_loops.py)
    "builtin.module(func.func(canonicalize,cse),lift-cf-to-scf,"
    "ownership-based-buffer-deallocation,canonicalize,buffer-deallocation-simplification)",
    fresh_results_not_cloned,
    lower_general_deallocs,
]
# convert-complex-to-standard: complex.add/eq/... on the parts in arith; left
# are create/re/im/constant, which convert-complex-to-llvm makes struct
# operations (in kernels too, inside the gpu.module, before NVVM conversion).
_AFTER_DEALLOCATION = ",".join([
    "convert-complex-to-standard",
    "bufferization-lower-deallocations",
    "convert-bufferization-to-memref",
    "func.func(canonicalize,cse)",
])

_TO_LLVM_COMMON = [
    "convert-math-to-funcs{convert-ctlz=false}",
    "expand-strided-metadata",
    "lower-affine",
    "finalize-memref-to-llvm{use-generic-functions=true}",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    "convert-complex-to-llvm",
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "convert-cf-to-llvm",
    "convert-func-to-llvm",
    "convert-ub-to-llvm",
    "reconcile-unrealized-casts",
]

def cpu_pipeline(threads: int) -> list:
    """Parallel loops split into tasks for MLIR's async runtime (a thread
    pool of `threads` workers); reductions are chunked per worker first
    (targets/cpu.py) since the runtime does not split scf.reduce loops."""
    return [reductions_as_loops] + _DEALLOCATION + [
        compare_exchanges, fences, precise_libm_calls, f"builtin.module({_AFTER_DEALLOCATION})",
        copies_of_views_as_loops, drop_wraparound_of_nonnegative_indices,
        hoist_invariant_divisions,      # LLVM's vectorizer mishandles them (invariant_divisions.py)
        "builtin.module(" + ",".join([
        f"async-parallel-for{{async-dispatch=true num-workers={threads} min-task-size=1}}",
        "async-to-async-runtime",
        "async-runtime-ref-counting",
        "async-runtime-ref-counting-opt",
        "convert-async-to-llvm",
        "convert-scf-to-cf",
        *_TO_LLVM_COMMON,
    ]) + ")", zero_for_poison]


@dataclass(frozen=True)
class GPUOptions:
    # architectures to build for, oldest first; with `sass`, each gets SASS
    # and the newest also PTX (gpu_binaries.py); without, PTX only (no ptxas)
    chips: tuple = ("sm_90",)
    sass: bool = True
    link: tuple = ()            # LLVM bitcode device libraries linked into every kernel module
    threads_per_block: int = schedules.ELEMENTWISE_THREADS
    elements_per_thread: int = schedules.ELEMENTWISE_ITEMS   # threads_per_block apart
    opt_level: int = 3
    # multiplications and additions in kernels may fuse into FMAs, as CUDA's
    # compilers do by default; $NUMBA_MLIR_GPU_FMA=0 keeps them apart
    contract: bool = True
    truncate_fp64: bool = False   # float64 arithmetic in kernels as float32 (fp64.py)


ENV_LAUNCH = "NUMBA_MLIR_GPU_LAUNCH"
ENV_FMA = "NUMBA_MLIR_GPU_FMA"


def options_from_env(default: GPUOptions) -> GPUOptions:
    """The launch shape ($NUMBA_MLIR_GPU_LAUNCH) and FMA contraction
    ($NUMBA_MLIR_GPU_FMA) as the environment sets them."""
    options = launch_shape_from_env(default)
    fma = os.environ.get(ENV_FMA, "").strip()
    if fma:
        options = dataclasses.replace(options, contract=fma not in ("0", "false", "no"))
    return options


def launch_shape_from_env(default: GPUOptions) -> GPUOptions:
    """$NUMBA_MLIR_GPU_LAUNCH="256x4" (threads per block x iterations per
    thread) overrides the launch shape; a tuning knob for benchmarks."""
    text = os.environ.get(ENV_LAUNCH, "").strip()
    if not text:
        return default
    try:
        threads, elements = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"{ENV_LAUNCH}={text!r}: expected THREADSxELEMENTS, e.g. 256x4") from None
    return dataclasses.replace(default, threads_per_block=threads, elements_per_thread=elements)


def gpu_pipeline(options: GPUOptions) -> list:
    """Parallel loops tiled onto blocks x threads, outlined into kernels and
    compiled through NVVM; host code calls the MLIR CUDA runtime. A list of
    stages: textual pipelines and Python rewrites between them."""
    o = options
    prepare = "builtin.module(" + ",".join([
        _AFTER_DEALLOCATION,
        # callees into the loops that become kernels, so that launch.py sees (and
        # interleaves) their bodies: a call left to LLVM after outlining ran at
        # half the speed of the same body written in the loop (a vectorize kernel)
        "inline",
        # before outlining, so the power functions it creates reach the kernels
        "convert-math-to-funcs{convert-ctlz=false}",
    ]) + ")"
    outline = "builtin.module(" + ",".join([
        "func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu,canonicalize,cse,"
        "gpu-launch-sink-index-computations)",
        "gpu-kernel-outlining",
    ]) + ")"
    toolkit = find_toolkit()
    link = f" l={','.join(o.link)}" if o.link else ""
    to_llvm = "builtin.module(" + ",".join([
        "lower-affine",
        "convert-scf-to-cf",
        *(f"nvvm-attach-target{{chip={chip} features={ptx_features(chip)} O={o.opt_level}{link}}}"
          for chip in o.chips),
        "gpu.module(strip-debuginfo,convert-complex-to-llvm,convert-gpu-to-nvvm,canonicalize,cse,"
        "reconcile-unrealized-casts)",
        *_TO_LLVM_COMMON[:-1],
        "gpu-to-llvm",
    ]) + ")"
    binaries = "builtin.module(" + ",".join([
        "gpu-module-to-binary{format=isa"
        + (f" toolkit={toolkit.libdevice_root}" if toolkit.libdevice_root else "") + "}",
        "canonicalize",
        "cse",
        "reconcile-unrealized-casts",
    ]) + ")"
    tile = TileParallelLoops(o.threads_per_block, o.elements_per_thread)
    sass = [functools.partial(assemble, ptxas=toolkit.ptxas, opt_level=o.opt_level)] \
        if o.sass else []
    return [schedule_reductions] + _DEALLOCATION + [
        compare_exchanges, fences, barriers_from_markers, prepare, fold_constant_scalar_buffers,
        issue_loads_early,
        copies_of_views_as_loops,
        drop_wraparound_of_nonnegative_indices, tile,
        outline, drop_kernel_functions, narrow_while_counters,
        *([truncate_fp64] if o.truncate_fp64 else []),
        reciprocal_division_in_kernels, ieee_sqrt_in_kernels,
        precise_libm_calls,
        *([contract_in_kernels] if o.contract else []), nvptx_data_layout, to_llvm,
        mark_kernels_that_allocate,
        # the kernels' poison too, before LLVM compiles them
        zero_for_poison, binaries, *sass, zero_for_poison]


# Functions that run only in kernels (kernel/body.py marks them): after
# outlining, their copies in the GPU modules are the ones used; the host's
# are dropped (they hold GPU-only operations: shared memory, shuffles).
KERNEL_FUNCTION_ATTR = "numba_mlir_gpu.kernel_function"


# NVPTX's data layout (LLVM's NVPTXTargetMachine). gpu-module-to-binary sets
# it only after translating to LLVM IR, and the translation gives each load
# and store the ABI alignment of LLVM's default layout, where an i64 is
# 4-aligned: every int64 load and store of a kernel became two 32-bit ones.
NVPTX_DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"


def nvptx_data_layout(module) -> None:
    """Each GPU module translated to LLVM IR with NVPTX's data layout."""
    for op in _ops(module, lambda op: op.name == "gpu.module"):
        op.attributes["llvm.data_layout"] = ir.StringAttr.get(NVPTX_DATA_LAYOUT)


def drop_kernel_functions(module) -> None:
    for op in list(module.body.operations):
        if op.operation.name == "func.func" and KERNEL_FUNCTION_ATTR in op.operation.attributes:
            op.erase()


def reductions_as_loops(module) -> None:
    """The axis reductions of lowering/structured.py as parallel loops over
    their outputs (the CPU's schedule; the GPU's is targets/gpu/structured.py)."""
    for op in generics(module):
        lower_as_loops(op)


def zero_for_poison(module) -> None:
    """llvm.mlir.poison -> llvm.mlir.zero (a refinement, so always allowed).

    lift-cf-to-scf gives a value that is undefined on some path (an array
    variable before its first assignment) a poison placeholder, and the
    ownership-based deallocation then compares its pointer: `false and
    poison` is poison, and a branch on it is undefined behaviour."""
    for op in _ops(module, lambda op: op.name == "llvm.mlir.poison"):
        with ir.InsertionPoint(op), op.location:
            zero = llvm.ZeroOp(op.results[0].type).result
        op.results[0].replace_all_uses_with(zero)
        op.erase()


# PTX's `barrier.sync` (LLVM's barrier.cta.sync.all), not `bar.sync`, which
# gpu.barrier becomes: `bar.sync` is `barrier.sync.aligned`, which every
# thread of a warp must reach at the same instruction. Our bodies let one
# thread store a result (BlockCooperation.single) between barriers, and
# LLVM merges such tails (a body's first store and an inner loop's last
# one into one block, a barrier on each side): the warp then reaches its
# barriers split, and an aligned barrier deadlocks the block (seed 2002795
# of the GPU program campaign hung; test_bug_barrier_after_a_single_thread_store).
BARRIER_INTRINSIC = "llvm.nvvm.barrier.cta.sync.all"


def barriers_from_markers(module) -> None:
    """Calls of the barrier marker (targets/gpu/reduce.py) -> a CTA barrier
    that threads may reach from divergent code (BARRIER_INTRINSIC).

    Buffer deallocation refuses barriers (they declare no memory effects),
    so the lowering emits an opaque call and this runs after deallocation."""
    i32 = None
    for op in _ops(module, lambda op: op.name == "func.call" and ir.FlatSymbolRefAttr(
            op.attributes["callee"]).value == BARRIER_MARKER):
        with ir.InsertionPoint(op), op.location:
            i32 = i32 or ir.IntegerType.get_signless(32)
            barrier_id = llvm.ConstantOp(i32, ir.IntegerAttr.get(i32, 0)).result
            llvm.CallIntrinsicOp(None, BARRIER_INTRINSIC, [barrier_id], [], [])
        op.erase()
    symbols = ir.SymbolTable(module.operation)
    if BARRIER_MARKER in symbols:
        symbols[BARRIER_MARKER].operation.erase()


_CONTRACTIBLE = {"arith.addf", "arith.subf", "arith.mulf", "arith.negf"}


def contract_in_kernels(module) -> None:
    """The `contract` fast-math flag on floating-point additions and
    multiplications inside GPU modules, added to the flags they have: the
    NVPTX backend then fuses `a * b + c` into one FMA (one rounding instead
    of two), as nvcc and NVRTC do unless told not to."""
    on_parts = _computed_from_complex_parts(module)
    for op in _ops(module, lambda op: op.name in _CONTRACTIBLE and _inside(op, "gpu.module")):
        if op.results[0] in on_parts:
            continue
        flags = operation_flags(op)
        if not flags & {"fast", "contract"}:
            op.attributes["fastmath"] = ir.Attribute.parse(
                f"#arith.fastmath<{','.join(sorted(flags | {'contract'}))}>")


def _computed_from_complex_parts(module) -> set:
    """The values computed (through arithmetic) from the parts of complex
    numbers. Complex arithmetic is left uncontracted, as Numba computes it:
    an FMA in `ar*br - ai*bi` turns inf - inf into -inf instead of NaN and
    makes `z * z.conjugate()` leave an imaginary part."""
    found = set()
    work = [op.results[0] for op in _ops(module, lambda op: op.name in ("complex.re", "complex.im"))]
    while work:
        value = work.pop()
        if value in found:
            continue
        found.add(value)
        for use in value.uses:
            owner = use.owner
            if owner.name.startswith(("arith.", "math.")):
                work.extend(owner.results)
    return found



def ieee_sqrt_in_kernels(module) -> None:
    """math.sqrt -> the llvm.sqrt intrinsic inside GPU modules.

    NVVM lowering turns math.sqrt into sqrt.approx (1 ulp off NumPy) and
    rejects llvm.intr.sqrt; a call of the intrinsic becomes sqrt.rn. Under
    fastmath with approximate functions allowed, sqrt.approx stays."""
    for op in _ops(module, lambda op: op.name == "math.sqrt" and _inside(op, "gpu.module")
                   and not allows_approximate_functions(op)):
        x = op.operands[0]
        name = "llvm.sqrt.f32" if isinstance(x.type, ir.F32Type) else "llvm.sqrt.f64"
        with ir.InsertionPoint(op), op.location:
            root = llvm.call_intrinsic(x.type, name, [x], [], [])
        op.results[0].replace_all_uses_with(root)
        op.erase()


# convert-math-to-llvm expands these as exp(x) - 1 and log(1 + x), which
# loses precision near 0; host code calls libm instead (kernels use libdevice).
_LIBM = {"math.expm1": "expm1", "math.log1p": "log1p"}


def precise_libm_calls(module) -> None:
    for op in _ops(module, lambda op: op.name in _LIBM and not _inside(op, "gpu.module")):
        x = op.operands[0]
        name = declare_function(module, _LIBM[op.name] + ("f" if isinstance(x.type, ir.F32Type)
                                                          else ""), [x.type], [x.type])
        with ir.InsertionPoint(op), op.location:
            call = func.CallOp([x.type], name, [x])
        op.results[0].replace_all_uses_with(call.results[0])
        op.erase()

