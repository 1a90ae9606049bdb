"""Faults the process survives on the GPU: a failing ptxas (kernels shipped
as PTX, with a PtxasWarning) and a KeyboardInterrupt during a long kernel
(raised when the call returns; the next call runs). Each in a process of
its own. The on-disk cache's faults are in test_cache.py."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu


def _run(script: str, **environment) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(),
                                                       os.environ.get("PYTHONPATH", "")]),
               **environment)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


BROKEN_PTXAS = """
    import json, warnings
    import numpy as np
    from numba import prange
    import numba_mlir_gpu

    def triple(x, out):
        for i in prange(x.shape[0]):
            out[i] = 3.0 * x[i]

    x, out = np.arange(1000.0), np.zeros(1000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = numba_mlir_gpu.njit(target="gpu")(triple)
        f(x, out)
    ptx = numba_mlir_gpu.compiled_function(f).ptx
    print(json.dumps({"ok": bool((out == 3.0 * x).all()),
                      "warnings": [str(w.message) for w in caught
                                   if issubclass(w.category, numba_mlir_gpu.PtxasWarning)],
                      "ptx": bool(ptx) and ".entry" in ptx[0]}))
"""


def test_a_failing_ptxas_ships_ptx_with_a_warning(tmp_path):
    from numba_mlir_gpu.compiler.toolkit import find_toolkit
    real = find_toolkit().libdevice_root
    if real is None or not os.path.isdir(os.path.join(real, "nvvm", "libdevice")):
        pytest.skip("no CUDA toolkit with libdevice to build the broken copy from")
    fake = tmp_path / "cuda"
    (fake / "bin").mkdir(parents=True)
    (fake / "nvvm").mkdir()
    os.symlink(os.path.join(real, "nvvm", "libdevice"), fake / "nvvm" / "libdevice")
    ptxas = fake / "bin" / "ptxas"
    ptxas.write_text("#!/bin/sh\necho 'ptxas fatal: broken on purpose' >&2\nexit 1\n")
    ptxas.chmod(0o755)
    result = _run(BROKEN_PTXAS, CUDA_HOME=str(fake),
                  PATH=f"{fake / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert result["ok"] and result["ptx"]
    assert len(result["warnings"]) == 1 and "broken on purpose" in result["warnings"][0]


INTERRUPTED = """
    import _thread, json, threading, time
    import numpy as np
    from numba import prange
    import numba_mlir_gpu

    @numba_mlir_gpu.njit(target="gpu")
    def spin(n, out):
        for i in prange(out.shape[0]):
            s = 0.0
            for k in range(n):
                s = s * 0.999999 + 1.0
            out[i] = s

    out = np.zeros(1 << 16)
    spin(10, out)
    threading.Timer(0.3, _thread.interrupt_main).start()
    start = time.perf_counter()
    try:
        spin(1 << 29, out)          # about a second or more on an H100
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    seconds = time.perf_counter() - start
    spin(10, out)
    expected = 0.0
    for _ in range(10):
        expected = expected * 0.999999 + 1.0
    print(json.dumps({"interrupted": interrupted, "seconds": seconds,
                      "after": bool(np.allclose(out, expected))}))
"""


def test_keyboard_interrupt_during_a_long_kernel():
    result = _run(INTERRUPTED)
    assert result["interrupted"], result
    assert result["after"], result


FAULTING_KERNEL = """
    import json
    import numpy as np
    from numba import prange
    import numba_mlir_gpu

    def scatter(x, out, far):
        for i in prange(x.shape[0]):
            out[i * far] = x[i]          # far outside `out` (no boundscheck)
        return out.sum()

    def doubled(x):
        return 2.0 * x               # allocates its result on the device

    f = numba_mlir_gpu.njit(target="gpu")(scatter)
    g = numba_mlir_gpu.njit(target="gpu")(doubled)
    g(np.ones(4))                    # compiled before the fault
    try:
        value = f(np.ones(4096), np.zeros(8), 1 << 36)
        outcome = {"raised": None, "value": float(value)}
    except RuntimeError as exc:
        outcome = {"raised": str(exc)}
    try:
        g(np.ones(1 << 20))
        outcome["after"] = None
    except (RuntimeError, MemoryError) as exc:
        outcome["after"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(outcome))
"""


def test_a_faulting_kernel_is_a_python_error_not_a_result():
    """An address far outside any allocation: CUDA reports the fault at the next
    synchronisation or copy; the call raises (no value computed from the faulted
    kernel's memory is returned) and the process exits normally."""
    out = _run(FAULTING_KERNEL)
    assert out["raised"] is not None, out
    assert "GPU kernel faulted" in out["raised"] and "boundscheck=True" in out["raised"]
    # CUDA's context stays unusable: the next call's device allocation fails
    # with the fault's status, which is the fault again, not out of memory
    assert out["after"] is not None and out["after"].startswith("RuntimeError"), out
    assert "GPU kernel faulted" in out["after"], out
