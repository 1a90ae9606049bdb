"""Test configuration shared by the whole repository.

Tests marked `gpu` need a CUDA device and are skipped cleanly without one;
everything else runs on the CPU target (and compiles GPU code, compile-only).
"""
import os

import pytest

def pytest_collection_modifyitems(config, items):
    from numba_mlir_gpu.runtime.cuda import cuda_device_available
    if cuda_device_available():
        if os.environ.get("PYTEST_XDIST_WORKER"):
            # beside other workers' GPU tests it would make them run out of memory
            alone = pytest.mark.skip(reason="exhausts GPU memory on purpose: run it alone, "
                                            "python -m pytest -m gpu_exclusive tests")
            for item in items:
                if "gpu_exclusive" in item.keywords:
                    item.add_marker(alone)
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
