"""GPU binaries for one or several architectures, and the pick at load time.

The pass pipeline ends each GPU module as a `gpu.binary` holding PTX, one
object per architecture (`gpu-module-to-binary{format=isa}`). `assemble`
turns each into SASS with ptxas and keeps the PTX of the newest one, which
the driver compiles for GPUs newer than any listed. MLIR's own `fatbin`
format would need the toolkit's `fatbinary` as well, which NVIDIA's pip
wheels lack, and builds for one architecture per run; here the objects
stay separate and `select_for_device` points each binary's
`#gpu.select_object` at the one the GPU can run, before the host code is
JIT-ed, so one build (or one on-disk cache entry) serves every GPU listed.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor

from .._mlir import gpu, ir

ENV_ARCH = "NUMBA_MLIR_GPU_ARCH"

# PTX ISA versions: 8.0 (CUDA 12.0) for Ampere and Hopper; newer chips need newer ISAs
_PTX_ISA = {"sm_100": 86, "sm_101": 86, "sm_103": 88, "sm_110": 90, "sm_120": 87, "sm_121": 88}
_ARCH = re.compile(r"^sm_(\d+)([af]?)$")
_CHIP = re.compile(r'chip = "([^"]+)"')


class GPUArchitectureError(RuntimeError):
    """No object of a GPU binary runs on this GPU."""


class PtxasWarning(UserWarning):
    """ptxas failed or is missing: the kernels are shipped as PTX, which the
    driver compiles when they load."""


def parse_archs(text: str) -> tuple[str, ...]:
    """"sm_80,sm_90" -> ("sm_80", "sm_90"), oldest first, checked."""
    archs = [a.strip().lower() for a in text.split(",") if a.strip()]
    for arch in archs:
        if not _ARCH.match(arch):
            raise ValueError(f"{arch!r} is not a GPU architecture; expected e.g. sm_80,sm_90")
    if not archs:
        raise ValueError("no GPU architecture given; expected e.g. sm_80,sm_90")
    return tuple(sorted(set(archs), key=_number))


def _number(arch: str) -> int:
    return int(_ARCH.match(arch).group(1))


def ptx_features(arch: str) -> str:
    return f"+ptx{_PTX_ISA.get(arch.rstrip('af'), 80)}"


def archs_from_env() -> tuple[str, ...] | None:
    text = os.environ.get(ENV_ARCH, "").strip()
    return parse_archs(text) if text else None


def _objects(binary: ir.Operation) -> list:
    return [gpu.ObjectAttr(o) for o in ir.ArrayAttr(binary.attributes["objects"])]


def _chip(obj) -> str:
    # #nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">
    return _CHIP.search(str(obj.target)).group(1)


def _is_ptx(obj) -> bool:
    return obj.format == gpu.CompilationTarget.Assembly


def _kind(obj) -> str:
    return "PTX" if _is_ptx(obj) else "SASS"


def binaries(module: ir.Module) -> list[ir.Operation]:
    return [op.operation for op in module.body.operations if op.operation.name == "gpu.binary"]


_warned_no_ptxas = False


def assemble(module: ir.Module, ptxas: str | None, opt_level: int = 3) -> None:
    """Each binary's PTX objects -> SASS (a cubin per architecture), plus the
    PTX of the newest. Without ptxas, or when it fails, the PTX stays (the
    driver compiles it at load) and a PtxasWarning says why."""
    work = [(binary, obj) for binary in binaries(module) for obj in _objects(binary)
            if _is_ptx(obj)]
    if not work:
        return
    if ptxas is None:
        global _warned_no_ptxas
        if not _warned_no_ptxas:        # once per process: every GPU compile would repeat it
            _warned_no_ptxas = True
            warnings.warn(PtxasWarning(
                "numba-mlir-gpu: no ptxas found (CUDA_HOME, CUDA_PATH, /usr/local/cuda, PATH, or "
                "`pip install numba-mlir-gpu[cuda]`), so the kernels are shipped as PTX for the "
                "driver to compile when they load"), stacklevel=2)
        return
    with ThreadPoolExecutor(max_workers=min(8, len(work))) as pool:
        cubins = list(pool.map(lambda w: _ptxas(ptxas, w[1], opt_level), work))
    failed = [c for c in cubins if isinstance(c, str)]
    if failed:
        warnings.warn(PtxasWarning(
            f"numba-mlir-gpu: ptxas failed, so the kernels are shipped as PTX for the driver to "
            f"compile ({failed[0]}); check the CUDA toolkit ({ptxas})"), stacklevel=2)
        return
    by_binary: dict = {}
    for (binary, obj), cubin in zip(work, cubins):
        by_binary.setdefault(binary, []).append(
            gpu.ObjectAttr.get(obj.target, int(gpu.CompilationTarget.Binary), cubin,
                               obj.properties, obj.kernels))
    for binary, objects in by_binary.items():
        newest_ptx = max(_objects(binary), key=lambda o: _number(_chip(o)))
        binary.attributes["objects"] = ir.ArrayAttr.get(objects + [newest_ptx])


def _ptxas(ptxas: str, obj, opt_level: int):
    """The cubin of one PTX object, or the first line of ptxas' error."""
    with tempfile.TemporaryDirectory(prefix="nmg-ptxas-") as folder:
        source, target = os.path.join(folder, "k.ptx"), os.path.join(folder, "k.cubin")
        with open(source, "wb") as f:
            f.write(bytes(obj.object).rstrip(b"\x00"))
        done = subprocess.run([ptxas, "-arch", _chip(obj), f"-O{opt_level}", source, "-o", target],
                              capture_output=True, text=True)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            return lines[0] if lines else f"exit status {done.returncode}"
        with open(target, "rb") as f:
            return f.read()


def _runs_on(obj, major: int, minor: int) -> bool:
    """SASS runs on its own major version at the same or a higher minor one
    (sm_80 on sm_86), except the arch-specific sm_XYa/f; PTX on any GPU at least as new."""
    m = _ARCH.match(_chip(obj))
    number, suffix = int(m.group(1)), m.group(2)
    if _is_ptx(obj):
        return not suffix and number <= major * 10 + minor
    if suffix:
        return number == major * 10 + minor
    return number // 10 == major and number % 10 <= minor


def select_for_device(module: ir.Module, capability: tuple[int, int], what: str) -> None:
    """Point each binary at the object this GPU runs: its own SASS, else the
    newest SASS of its family, else PTX to JIT; none is a clear error."""
    major, minor = capability
    for binary in binaries(module):
        objects = _objects(binary)
        ranked = sorted(
            (i for i, o in enumerate(objects) if _runs_on(o, major, minor)),
            key=lambda i: (not _is_ptx(objects[i]), _number(_chip(objects[i]))))
        if not ranked:
            built = ", ".join(f"{_chip(o)} ({_kind(o)})" for o in objects)
            raise GPUArchitectureError(
                f"numba-mlir-gpu: {what} was built for {built}, which this GPU (sm_{major}{minor}) "
                f"cannot run; build it for sm_{major}{minor} too ({ENV_ARCH} or --arch)")
        binary.attributes["offloadingHandler"] = ir.Attribute.parse(
            f"#gpu.select_object<{ranked[-1]}>")


def described(module: ir.Module) -> list[list[tuple[str, str, bytes]]]:
    """Per binary, (architecture, "SASS"|"PTX", its bytes) of each object:
    for inspection and tests."""
    return [[(_chip(o), _kind(o), bytes(o.object)) for o in _objects(b)]
            for b in binaries(module)]
