"""print() in host code: the same line as numba.njit writes (str() of each
value, spaces between), on both targets. Inside prange bodies and kernels:
printf, one call a line, formatted as numba.cuda's print (%lld, %llu, %f),
to file descriptor 1 (CPU) or through CUDA's printf buffer (GPU)."""
import numba
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu import UnsupportedConstructError

from .support import TARGETS, ours


def prints(a, n):
    s = a.sum()
    print("sum is", s, n, np.uint64(2 ** 63 + 5), True, np.float32(0.1), a.shape[0] > 2)
    print()
    print(1.5, "x", np.int8(-3))
    for i in range(2):
        print("row", i, a[i] * 2)
    return s


@pytest.mark.parametrize("target", TARGETS)
def test_print_writes_what_numba_writes(target, capsys):
    a = np.arange(4.0)
    numba.njit(prints)(a, -3)
    expected = capsys.readouterr().out
    assert ours(prints, target)(a, -3) == 6.0
    assert capsys.readouterr().out == expected
    assert expected.startswith("sum is 6.0 -3 9223372036854775813 True 0.10000000149011612 True\n")


def prints_items_in_prange(a, flag):
    for i in prange(a.shape[0]):
        print("item", i, a[i], "100%", flag, a[i] > 1.0, np.uint64(2 ** 63 + 5), np.int8(-3))


def _expected_lines(a, flag):
    return sorted(f"item {i} {a[i]:f} 100% {flag} {a[i] > 1.0} 9223372036854775813 -3"
                  for i in range(a.shape[0]))


def test_print_in_a_prange_body_writes_a_printf_line_per_iteration(capfd):
    a = np.array([0.5, 1.5, -2.25, 1e10])
    ours(prints_items_in_prange, "cpu")(a, True)
    lines = capfd.readouterr().out.splitlines()
    assert sorted(lines) == _expected_lines(a, True)     # iterations in any order


def test_print_in_a_prange_body_builds_gpu_printf():
    """Compile-only: the kernel calls vprintf with the line's format."""
    from numba_mlir_gpu import inspect_ptx
    from numba_mlir_gpu.frontend.wrapper import CompileOnlyError
    f = ours(prints_items_in_prange, "compile-only")
    with pytest.raises(CompileOnlyError):
        f(np.ones(3), False)
    ptx = "\n".join(inspect_ptx(f, f.signatures[0]))
    assert "vprintf" in ptx
    assert "item %lld %f 100%% False True %llu %lld" in _ptx_strings(ptx)


def _ptx_strings(ptx: str) -> str:
    """The text of the PTX's byte-array globals (the formats)."""
    import re
    texts = []
    for body in re.findall(r"\.global \.align \d+ \.b8 \S+\[\d+\] = \{([^}]*)\}", ptx):
        texts.append(bytes(int(b) for b in body.split(",")).decode(errors="replace"))
    return "\n".join(texts)


@pytest.mark.gpu
def test_print_in_a_prange_body_on_the_gpu():
    """CUDA's printf writes to the process's stdout when the host synchronises:
    a fresh process, whose output is read whole."""
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import numpy as np
        from numba import prange
        import numba_mlir_gpu
        @numba_mlir_gpu.njit(target="gpu")
        def f(a, flag):
            for i in prange(a.shape[0]):
                print("item", i, a[i], "100%", flag, a[i] > 1.0, np.uint64(2 ** 63 + 5),
                      np.int8(-3))
        f(np.array([0.5, 1.5, -2.25, 1e10]), True)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    a = np.array([0.5, 1.5, -2.25, 1e10])
    assert sorted(done.stdout.splitlines()) == _expected_lines(a, True)


def test_print_of_an_array_in_a_prange_body_is_refused():
    def prints_rows(a):
        for i in prange(a.shape[0]):
            print(a[i])
    with pytest.raises(UnsupportedConstructError, match="print.. of array"):
        ours(prints_rows, "cpu")(np.ones((2, 2)))
