"""Ahead-of-time GPU builds (numba_mlir_gpu.aot) and builds for several
architectures ($NUMBA_MLIR_GPU_ARCH).

Builds run here with no GPU and no driver; the GPU tests build with the GPU
hidden (CUDA_VISIBLE_DEVICES=""), then load the build in another process."""
import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu import aot
from numba_mlir_gpu.compiler.toolkit import find_toolkit

MODULE = textwrap.dedent("""
    import math
    from numba import prange
    import numba_mlir_gpu

    @numba_mlir_gpu.njit
    def wave(x, out):
        for i in prange(x.shape[0]):
            out[i] = math.sin(x[i]) * 2.0 + x[i]
""")

SIGNATURES = ["void(f8[:], f8[:])", "void(f4[:], f4[:])"]

RUN = textwrap.dedent("""
    import json, time
    start = time.perf_counter()
    import numpy as np
    import numba_mlir_gpu
    from numba_mlir_gpu.compiler import jit
    import aot_sample
    x = np.linspace(-3.0, 3.0, 1000)
    out = np.zeros_like(x)
    x32, out32 = x.astype(np.float32), np.zeros(1000, np.float32)
    error = None
    try:
        aot_sample.wave(x, out)
        aot_sample.wave(x32, out32)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"pipeline_runs": jit.PIPELINE_RUNS, "out": out.tolist(),
                      "out32": out32.tolist(), "error": error,
                      "seconds": time.perf_counter() - start,
                      "signatures": len(aot_sample.wave.overloads)}))
""")

needs_ptxas = pytest.mark.skipif(find_toolkit().ptxas is None,
                                 reason="no ptxas (pip install numba-mlir-gpu[cuda])")


def _environment(folder, **extra) -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(folder), os.getcwd(), os.environ.get("PYTHONPATH", "")]), **extra)


def _build(folder, archs: str, **extra) -> str:
    (folder / "aot_sample.py").write_text(MODULE)
    command = [sys.executable, "-m", "numba_mlir_gpu.aot", "aot_sample:wave", *SIGNATURES,
               "--arch", archs, "-o", str(folder / "build")]
    done = subprocess.run(command, cwd=folder, env=_environment(folder, **extra),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _run(folder, **extra) -> dict:
    done = subprocess.run([sys.executable, "-c", RUN], cwd=folder,
                          env=_environment(folder, **extra), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _expected(x):
    return np.sin(x) * 2.0 + x


def _cubin_arch(blob: bytes) -> int:
    """The SM version a CUDA ELF is for (e_flags: low byte before the ELF
    ABI of CUDA 12.8 (sm_100 on), bits 8-15 after)."""
    assert blob[:4] == b"\x7fELF" and blob[4] == 2          # 64-bit ELF
    machine, = struct.unpack_from("<H", blob, 18)
    assert machine == 190                                   # EM_CUDA
    flags, = struct.unpack_from("<I", blob, 48)
    return flags & 0xFF if blob[7] != 0x41 else (flags >> 8) & 0xFF


@needs_ptxas
def test_a_build_without_a_gpu_holds_sass_for_each_architecture_and_ptx_for_the_newest(tmp_path):
    report = _build(tmp_path, "sm_100,sm_80,sm_90")
    assert "sm_80 SASS" in report and "sm_100 PTX" in report
    entries = aot.contents(str(tmp_path / "build"))
    assert len(entries) == 2
    for entry in entries:
        (module,) = entry.objects          # one GPU module: the prange loop's kernel
        assert [(arch, kind) for arch, kind, _ in module] == [
            ("sm_80", "SASS"), ("sm_90", "SASS"), ("sm_100", "SASS"), ("sm_100", "PTX")]
        assert [_cubin_arch(blob) for _, kind, blob in module if kind == "SASS"] == [80, 90, 100]
        ptx = module[-1][2].decode()
        assert ".target sm_100" in ptx
        # math.sin came from libdevice and was linked in: nothing is left to resolve
        assert "__nv_" not in ptx and ".extern" not in ptx


def test_architectures_are_checked():
    from numba_mlir_gpu.compiler.gpu_binaries import parse_archs
    assert parse_archs("sm_90, sm_80,sm_90") == ("sm_80", "sm_90")
    for bad in ("", "90", "compute_90", "sm_9x"):
        with pytest.raises(ValueError, match="architecture"):
            parse_archs(bad)


def test_compile_only_builds_ptx_for_each_listed_architecture(monkeypatch):
    monkeypatch.setenv("NUMBA_MLIR_GPU_ARCH", "sm_80,sm_100")

    def double(x, out):
        for i in prange(x.shape[0]):
            out[i] = 2.0 * x[i]

    f = numba_mlir_gpu.njit(target="compile-only")(double)
    with pytest.raises(Exception):
        f(np.ones(4), np.zeros(4))        # compile-only: built, not run
    ptx = numba_mlir_gpu.compiled_function(f).ptx
    assert [line for p in ptx for line in p.splitlines() if line.startswith(".target")] == [
        ".target sm_80", ".target sm_100"]


@needs_ptxas
def test_a_gpu_build_in_use_on_a_machine_without_a_gpu_compiles_for_the_cpu(tmp_path):
    """The folder's entries are for the GPU target; here they are skipped and
    the function compiles and runs on the CPU target."""
    _build(tmp_path, "sm_90")
    result = _run(tmp_path, NUMBA_MLIR_GPU_AOT=str(tmp_path / "build"),
                  NUMBA_MLIR_GPU_TARGET="cpu")
    assert result["error"] is None and result["pipeline_runs"] == 2
    x = np.linspace(-3.0, 3.0, 1000)
    np.testing.assert_allclose(result["out"], _expected(x), rtol=1e-15)


@pytest.mark.gpu
def test_a_build_made_with_no_gpu_visible_runs_with_no_pipeline_run(tmp_path):
    _build(tmp_path, "sm_80,sm_90,sm_100", CUDA_VISIBLE_DEVICES="")
    result = _run(tmp_path, NUMBA_MLIR_GPU_AOT=str(tmp_path / "build"))
    assert result["error"] is None
    assert result["pipeline_runs"] == 0 and result["signatures"] == 2
    x = np.linspace(-3.0, 3.0, 1000)
    np.testing.assert_allclose(result["out"], _expected(x), rtol=1e-15)
    np.testing.assert_allclose(result["out32"], _expected(x.astype(np.float32)), rtol=1e-6)


@pytest.mark.gpu
def test_a_build_for_newer_gpus_only_is_a_clear_error(tmp_path):
    from numba_mlir_gpu.runtime.cuda import compute_capability
    major, minor = compute_capability()
    newer = "sm_120" if major * 10 + minor < 120 else None
    if newer is None:
        pytest.skip("no architecture newer than this GPU's to build for")
    _build(tmp_path, newer, CUDA_VISIBLE_DEVICES="")
    result = _run(tmp_path, NUMBA_MLIR_GPU_AOT=str(tmp_path / "build"))
    assert result["error"].startswith("GPUArchitectureError")
    assert f"sm_{major}{minor}" in result["error"] and newer in result["error"]


@pytest.mark.gpu
@pytest.mark.parametrize("archs", ["sm_80,sm_90,sm_100", "sm_80"])
def test_the_jit_builds_for_listed_architectures_and_picks_the_gpus(monkeypatch, archs):
    """sm_80 alone on a newer GPU runs from its PTX (the driver compiles it)."""
    monkeypatch.setenv("NUMBA_MLIR_GPU_ARCH", archs)

    def wave(x, out):
        for i in prange(x.shape[0]):
            out[i] = np.sin(x[i]) * 2.0 + x[i]

    f = numba_mlir_gpu.njit(target="gpu")(wave)
    x = np.linspace(-3.0, 3.0, 1000)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_allclose(out, _expected(x), rtol=1e-15)
    lowered = numba_mlir_gpu.compiled_function(f).lowered_mlir
    for arch in archs.split(","):
        assert f'chip = "{arch}"' in lowered


def test_without_a_toolkit_ptxas_and_libdevice_come_from_nvidias_wheel(monkeypatch, tmp_path):
    """`pip install numba-mlir-gpu[cuda]` (the test extra has it too): with no
    CUDA_HOME, no ptxas on PATH and no /usr/local/cuda, both are found in the
    nvidia-cuda-nvcc wheel."""
    from numba_mlir_gpu.compiler import toolkit
    roots = toolkit._wheel_roots()      # other nvidia-* wheels (cuBLAS...) share the namespace
    with_ptxas = [r for r in roots if os.access(os.path.join(r, "bin", "ptxas"), os.X_OK)]
    with_libdevice = [r for r in roots if os.path.exists(os.path.join(r, toolkit.LIBDEVICE))]
    if not with_ptxas:
        pytest.skip("the nvidia-cuda-nvcc wheel is not installed")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setattr(toolkit, "SYSTEM_ROOT", str(tmp_path / "no-cuda"))
    found = toolkit.find_toolkit()
    assert found.ptxas == os.path.join(with_ptxas[0], "bin", "ptxas")
    assert found.libdevice_root == (with_libdevice[0] if with_libdevice else None)
    done = subprocess.run([found.ptxas, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and "Cuda compilation tools" in done.stdout
