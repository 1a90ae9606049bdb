"""The MLIR pass pipelines, all in one place, as textual pipelines.

Both targets share the front part (promote slots to SSA, free temporaries);
they differ in how parallel loops are run and in the memory allocator that
`memref.alloc` calls (`_mlir_memref_to_llvm_alloc`, defined by runtime.py in
each module: malloc on the CPU, CUDA managed memory on the GPU).
"""
from __future__ import annotations

from dataclasses import dataclass

# Cleanup after lowering: slots to SSA values, then free every temporary
# array that is not returned (returned arrays are owned by the caller).
_FRONT = ",".join([
    "func.func(mem2reg,canonicalize,cse)",
    "lift-cf-to-scf",
    "buffer-deallocation-pipeline",
    "func.func(canonicalize,cse)",
])

_TO_LLVM_COMMON = [
    "convert-math-to-funcs{convert-ctlz=false}",
    "expand-strided-metadata",
    "lower-affine",
    "finalize-memref-to-llvm{use-generic-functions=true}",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "convert-cf-to-llvm",
    "convert-func-to-llvm",
    "convert-ub-to-llvm",
    "reconcile-unrealized-casts",
]

CPU_PIPELINE = "builtin.module(" + ",".join([
    _FRONT,
    "convert-scf-to-cf",
    *_TO_LLVM_COMMON,
]) + ")"


@dataclass(frozen=True)
class GPUOptions:
    chip: str = "sm_90"
    features: str = "+ptx80"
    format: str = "fatbin"      # "isa" gives PTX text and needs no CUDA toolkit
    threads_per_block: int = 256
    opt_level: int = 3


def gpu_pipeline(options: GPUOptions) -> list:
    """Parallel loops tiled onto blocks x threads, outlined into kernels and
    compiled through NVVM; host code calls the MLIR CUDA runtime. A list of
    stages: textual pipelines and Python rewrites between them."""
    o = options
    outline = "builtin.module(" + ",".join([
        _FRONT,
        f"func.func(scf-parallel-loop-tiling{{parallel-loop-tile-sizes={o.threads_per_block} "
        "no-min-max-bounds=true},gpu-map-parallel-loops,convert-parallel-loops-to-gpu,"
        "canonicalize,cse)",
        "gpu-kernel-outlining",
    ]) + ")"
    compile_ = "builtin.module(" + ",".join([
        "lower-affine",
        "convert-scf-to-cf",
        f"nvvm-attach-target{{chip={o.chip} features={o.features} O={o.opt_level}}}",
        "gpu.module(strip-debuginfo,convert-gpu-to-nvvm,canonicalize,cse,"
        "reconcile-unrealized-casts)",
        *_TO_LLVM_COMMON[:-1],
        "gpu-to-llvm",
        f"gpu-module-to-binary{{format={o.format}}}",
        "canonicalize",
        "cse",
        "reconcile-unrealized-casts",
    ]) + ")"
    return [outline, ieee_sqrt_in_kernels, compile_]


def ieee_sqrt_in_kernels(module) -> None:
    """math.sqrt -> the llvm.sqrt intrinsic inside GPU modules.

    NVVM lowering turns math.sqrt into sqrt.approx (1 ulp off NumPy) and
    rejects llvm.intr.sqrt; a call of the intrinsic becomes sqrt.rn."""
    from ._mlir import ir, llvm
    found = []

    def visit(op):
        if op.name == "math.sqrt" and _inside(op, "gpu.module"):
            found.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    for op in found:
        x = op.operands[0]
        name = "llvm.sqrt.f32" if isinstance(x.type, ir.F32Type) else "llvm.sqrt.f64"
        with ir.InsertionPoint(op), op.location:
            root = llvm.call_intrinsic(x.type, name, [x], [], [])
        op.results[0].replace_all_uses_with(root)
        op.erase()


def _inside(op, name: str) -> bool:
    parent = op.parent
    while parent is not None:
        if parent.name == name:
            return True
        parent = parent.parent
    return False
