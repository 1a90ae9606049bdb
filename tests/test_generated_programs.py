"""Generated prange programs (issue 18, item 2): a fixed-seed sample of the programs of
numba_mlir_gpu/testing/progen.py, each compiled by our njit (fallback=False) and by
Numba's serial njit (the oracle), run on the same inputs and compared (returned
reductions and the arrays written). docs/testing.md, "Generated programs", describes the
grammar, the oracle and the tolerances; the longer campaigns run from the command line:

    python -m numba_mlir_gpu.testing.progen --target cpu --count 10000 --seed 1000000 --jobs 2

A refusal (UnsupportedConstructError) is not a failure; any other error, or a value
that differs, is. The `test_bug_*` tests are minimal reproducers of failures the
campaigns found (strict xfail until the lowering is fixed, then regression tests)."""
import time
import warnings

import pytest
from numba import prange

from numba_mlir_gpu.testing import progen as P
from numba_mlir_gpu.testing.isolated import run_isolated

from .support import TARGETS, this_weeks_half

pytestmark = pytest.mark.filterwarnings("ignore")

# 30 programs in 6 chunks (one pytest test each, so that -n spreads them), half of the
# chunks in each CI run (differential.this_weeks_half); about 100 seconds of one core on the
# CPU target for all six (2026-11-26). The campaigns of docs/testing.md run thousands.
CI_SEED = 20261125
CHUNKS, PER_CHUNK = 6, 5


# Programs of the sample that hit a known bug (a strict-xfail test_bug_* below); they are
# left out of the sample while the bug is there (delete the entry once fixed).
KNOWN_BUG_SEEDS: dict[int, str] = {}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("chunk", this_weeks_half(range(CHUNKS)))
def test_generated_sample(chunk, target):
    problems, counts = [], {"pass": 0, "refused": 0, "failed": 0, "invalid": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(CI_SEED + chunk * PER_CHUNK, CI_SEED + (chunk + 1) * PER_CHUNK):
            if seed in KNOWN_BUG_SEEDS:
                continue
            out = P.run_program(P.generate(seed), target, seed)
            counts[out.status] += 1
            if out.status in ("failed", "invalid"):
                problems.append(f"seed {seed} ({out.status}): {out.detail}\n"
                                f"{P.generate(seed).source()}\n"
                                f"shrink: python -m numba_mlir_gpu.testing.progen --target "
                                f"{target} --seed {seed} --count 1 --shrink")
    assert not problems, f"{counts}\n" + "\n".join(problems)
    assert counts["pass"] >= PER_CHUNK // 2, counts


def test_generator_is_deterministic_and_race_free_by_construction():
    """Same seed, same text; every program compiles under Numba's serial njit."""
    for seed in range(CI_SEED, CI_SEED + 20):
        a, b = P.generate(seed).source(), P.generate(seed).source()
        assert a == b
        compile(a, "<generated>", "exec")
        assert "prange(" in a


def test_shrinker_reduces_a_failure(monkeypatch):
    """The shrinker keeps a failure of the same kind while deleting and simplifying:
    a fake failure (every program calling np.tanh "fails") shrinks to a few lines."""
    orig = P.compare

    def fake(prog, *args):
        if "np.tanh(" in prog.source():
            raise P.Mismatch("fake")
        return orig(prog, *args)

    monkeypatch.setattr(P, "compare", fake)
    seed = next(s for s in range(CI_SEED, CI_SEED + 500)
                if "np.tanh(" in P.generate(s).source()
                and P.run_program(P.generate(s), "cpu", s).kind == "mismatch")
    prog = P.generate(seed)
    small, out, _ = P.shrink(prog, "cpu", seed, "mismatch", budget_s=20)
    assert out.kind == "mismatch"
    assert "np.tanh(" in small.source()
    assert len(small.source()) < len(prog.source())


# ---------------------------------------------------------------------------------------
# Minimal reproducers of the failures the campaigns found (strict xfail until fixed,
# then regression tests).
# Each runs its source through P.run_program against Numba's serial njit, on the sizes
# (n, m) that showed the failure.
# ---------------------------------------------------------------------------------------

def _run_reproducer(text, returns, target, seed, sizes, ret_kinds=None, refusal_ok=True):
    out = P.run_program(P.Source(text, returns, ret_kinds), target, seed, sizes)
    assert out.status in (("pass", "refused") if refusal_ok else ("pass",)), out.detail


BUG_REDUCTION_IN_BRANCH_LOOP = '''
def f(x, x2, y, z, A, B, out1, out2, iout, alpha, kk):
    n = x.shape[0]
    m = A.shape[1]
    q2 = 0
    for i5 in prange(n - 1, -1, -1):
        if (A[0, 0] < 0.5):
            pass
        else:
            for j6 in range(1, m):
                q2 += 3
        c9 = 0.0
    return (q2, )
'''


# Fixed: Numba's parfor pass (Numba 0.68.1, Python 3.11) lost the updates, returning the
# initial value (0 where the serial loop gives 12), and so did Numba's own parallel=True;
# frontend/loop_exits.py gives the inner loop's exit a block of its own so that Numba's
# reduction analysis finds them (tests/test_loop_exits.py has the other shapes).
@pytest.mark.parametrize("target", TARGETS)
def test_bug_reduction_in_loop_in_branch(target):
    # seed 1000087 of the CPU campaign, shrunk; n=2, m=3
    _run_reproducer(BUG_REDUCTION_IN_BRANCH_LOOP, ["q2"], target, 1000087, [(2, 3)],
                    {"q2": "i"}, refusal_ok=False)


# as test_bug_reduction_in_loop_in_branch, written directly (float sum, no else branch)
@pytest.mark.parametrize("target", TARGETS)
def test_bug_reduction_in_loop_in_branch_direct(target):
    import numba
    import numpy as np
    from numba import prange

    import numba_mlir_gpu

    def f(A, m):
        q = 0.0
        for i in prange(A.shape[0]):
            if A[0, 0] >= 0.5:
                for j in range(m):
                    q += 3.0
            c = 0.0  # noqa: F841
        return q

    A = np.ones((2, 3))
    expected = numba.njit(f)(A, 3)   # 18.0
    got = numba_mlir_gpu.njit(target=target, fallback=False)(f)(A, 3)   # was 0.0
    assert got == expected


@pytest.mark.parametrize("target", TARGETS)
def test_bug_numba_reduction_analysis_copy_cycle(target):
    """Seed 1009553 of the CPU campaign: Numba's reduction analysis met a cycle
    of phi copies ('unexpected cycle in lookup()', Numba issue 10132;
    njit(parallel=True) fails alike on this Python). frontend/numba_fixes.py
    runs it again without the cyclic copies: the program compiles and equals
    the serial loop."""
    out = P.run_program(P.generate(1009553, whiles=False), target, 1009553)
    assert out.status == "pass", out.detail


# Seed 2002795 of the GPU campaign, shrunk: the kernel hung. Thread 0 stores out1[i13]
# between barriers (BlockCooperation.single) before the inner loop and at the end of its
# iterations; LLVM merged the two stores into one block, so the warp reached its
# barriers split, and PTX's `bar.sync` (aligned: the whole warp at one instruction)
# deadlocked. Barriers are `barrier.sync` now (compiler/passes.BARRIER_INTRINSIC).
BUG_BARRIER_AFTER_SINGLE_STORE = """
def f(x, x2, y, z, A, B, out1, out2, iout, alpha, kk):
    n = x.shape[0]
    m = A.shape[1]
    g12 = 0.0
    for i13 in prange(0, n, 2):
        out1[i13] = float(i13)
        for j14 in range(1, m):
            if (iout[i13] % 4 == 0):
                out1[i13] += (g12 if (1 % 4 == 0) else alpha)
            out1[i13] = float(n)
            out1[i13] = g12
        out1[i13] = np.sum(A[i13] * 0.5)
    return (g12, )
"""


def _hung(w, code):
    return P.Outcome("failed", f"no result: {code}", "hang")


@pytest.mark.parametrize("target", TARGETS)
def test_bug_barrier_after_a_single_thread_store(target):
    """Run in a process of its own with a time limit: the bug hangs the GPU."""
    prog = P.Source(BUG_BARRIER_AFTER_SINGLE_STORE, ["g12"])
    work = [(P.run_program, prog, target, 2002795, [(1, 1), (5, 4), (33, 7)])]
    (out,) = run_isolated(P._run_args, work, 1, _hung, start="spawn", limit=120)
    assert out.status == "pass", out.detail


def test_gpu_barriers_may_be_reached_from_divergent_code():
    """Compile-only (CI): the kernel's barriers are PTX's unaligned
    `barrier.sync`, never `bar.sync`, which needs the whole warp at the same
    instruction."""
    import numpy as np

    from .test_codegen import all_ptx, compile_only
    ns = {"np": np, "prange": prange}
    exec(BUG_BARRIER_AFTER_SINGLE_STORE, ns)
    args = P.make_inputs(1, 5, 4)
    ptx = all_ptx(compile_only(ns["f"], *args))
    assert "barrier.sync" in ptx and "bar.sync" not in ptx


def _dies_on_seed_3(w):
    import os
    seed, _ = w
    if seed == 3:
        os._exit(134)
    return seed, "pass", None, "", 0.0


def test_campaign_survives_a_program_that_kills_its_process(monkeypatch, tmp_path):
    """A program whose compilation aborts its worker (an MLIR assertion) is
    a failure naming the seed; the pool's lost tasks run again, one process
    each (the pool alone waited for them forever)."""
    import json
    monkeypatch.setattr(P, "_work", _dies_on_seed_3)
    monkeypatch.setattr(P, "LOST_AFTER", 5)
    out = tmp_path / "campaign.json"
    P.main(["--count", "6", "--seed", "1", "--jobs", "2", "--out", str(out)])
    data = json.loads(out.read_text())
    assert data["counts"]["pass"] == 5 and data["counts"]["failed"] == 1
    assert data["failures"][0]["seed"] == 3 and "exit code 134" in data["failures"][0]["detail"]


@pytest.mark.parametrize("target", ["cpu", "compile-only"])
def test_bug_dead_inner_loop_with_continues_aborted_mlir(target):
    """Seed 1009692 of the CPU campaign: an inner loop whose reduction is
    never read, with two `continue`s, left a dead scf.for around a
    multi-block region; MLIR's canonicalizer asserted while erasing it and
    the process aborted. cse runs first now (compiler/passes.py)."""
    src = """
def f(x, A, out):
    for i in prange(x.shape[0]):
        t = x[i]
        c = 0.0
        for j in range(1, A.shape[1]):
            if A[i, j] < 0.5:
                continue
            c += t
            if t > 0.5:
                continue
        out[i] = t
    return out
"""
    import numba
    import numpy as np
    import numba_mlir_gpu
    from numba_mlir_gpu.frontend.wrapper import CompileOnlyError
    fn = P.compile_source(src)
    rng = np.random.default_rng(1)
    args = (rng.random(37), rng.random((37, 9)), np.zeros(37))
    ours = numba_mlir_gpu.njit(target=target, fallback=False)(fn)
    if target == "compile-only":
        with pytest.raises(CompileOnlyError):
            ours(*args)
        # the campaign counts a program whose GPU code was built as passed
        assert P.run_program(P.generate(1009692, whiles=False), target, 1009692).status == "pass"
        return
    np.testing.assert_array_equal(ours(*args), numba.njit(fn)(*args))
    assert P.run_program(P.generate(1009692, whiles=False), "cpu", 1009692).status == "pass"


def dead_inner_loop_with_a_branch(x, alpha, out):
    for i in prange(x.shape[0]):
        c = 0.0
        for j in range(i + 1):      # nothing reads c or t
            if j % 2 == 0:
                continue
            c = max(c, 1.5)
            t = 1.5 if 1.5 <= alpha else x[j]
        out[i] = 2.0 * x[i]
    return out


@pytest.mark.parametrize("target", [*TARGETS, "compile-only"])
def test_bug_dead_inner_loop_with_a_branch_aborted_the_canonicalizer(target):
    """Seed 20261127554 of the CPU campaign, shrunk: the canonicalizer erased
    the dead inner loop (its body a multi-block region) and MLIR's eraseOp
    asserted that an operation there still had uses; the process aborted.
    compiler/dead_loops.py erases such loops first."""
    import numpy as np
    from .support import check
    from .test_codegen import compile_only
    args = (np.random.default_rng(5).random(23), 0.3, np.zeros(23))
    if target == "compile-only":
        compile_only(dead_inner_loop_with_a_branch, *args)
    else:
        check(dead_inner_loop_with_a_branch, *args, target=target)
    assert P.run_program(P.generate(20261127554, whiles=False), "cpu", 20261127554).status == "pass"


def _rewritten(text: str, rewrite) -> str:
    """`text` (MLIR) parsed, rewritten by a Python stage, verified, printed."""
    from numba_mlir_gpu._mlir import ir
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        rewrite(module)
        module.operation.verify()
        return str(module)


def test_loops_whose_values_are_used_or_stored_stay():
    from numba_mlir_gpu.compiler.dead_loops import erase_dead_loops
    text = """
    func.func @f(%m: memref<f64>, %n: index) -> f64 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %z = arith.constant 0.0 : f64
      %dead = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> f64 {
        %v = memref.load %m[] : memref<f64>
        %s = arith.addf %a, %v : f64
        scf.yield %s : f64
      }
      %unused = arith.mulf %dead, %dead : f64
      %used = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> f64 {
        %s = arith.addf %a, %z : f64
        scf.yield %s : f64
      }
      scf.for %i = %c0 to %n step %c1 {
        memref.store %z, %m[] : memref<f64>
      }
      return %used : f64
    }"""
    kept = _rewritten(text, erase_dead_loops)
    assert kept.count("scf.for") == 2 and "arith.mulf" not in kept
    assert "memref.store" in kept and "memref.load" not in kept


CONDITIONAL_MODULO_INDEX = """
import numpy as np
from numba import prange
import numba_mlir_gpu

def f(A, out):
    n = A.shape[0]
    for i in prange(n):
        for j in range(A.shape[1]):
            if 3.0 < A[0, j]:
                if A[7 % n, 0] < 1.5:
                    continue
            out[i, j] = 1.5
    return out

def g(x, A, out):
    # n read from its slot in the nested prange, behind a short-circuit `and`
    n = x.shape[0]
    v = x * 0.25
    for i in prange(n):
        for j in prange(A.shape[1]):
            if 3.0 < A[i, j]:
                if v[i] > 0.0 and A[7 % n, j] < 1.25:
                    continue
            out[i, j] = 0.5
    return out

A = np.random.default_rng(0).random((30, 30)) * 4
x = np.random.default_rng(1).random(30) - 0.5
got = numba_mlir_gpu.njit(target="cpu")(f)(A, np.zeros((30, 30)))
ok = np.array_equal(got, f(A, np.zeros((30, 30))))
got = numba_mlir_gpu.njit(target="cpu")(g)(x, A, np.zeros((30, 30)))
print(bool(ok and np.array_equal(got, g(x, A, np.zeros((30, 30))))))
"""


def test_bug_conditional_modulo_index_in_an_inner_loop_segfaulted_on_the_cpu():
    """Seed 20261127671 of the CPU campaign, shrunk. LLVM's loop vectorizer
    computed the invariant, unspeculatable `urem 7, n` only where lane 0's
    condition held, then gathered through it for every lane whose condition
    held: a segfault where lane 0's was false (gdb: `vgatherdpd` in
    async_dispatch_fn_0). compiler/invariant_divisions.py computes such
    divisions before the loop. In a child process: it killed the interpreter."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(),
                                                       os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", CONDITIONAL_MODULO_INDEX], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.returncode


def test_guarded_invariant_divisions_move_before_their_loop():
    from numba_mlir_gpu.compiler.invariant_divisions import hoist_invariant_divisions
    text = """
    func.func @f(%m: memref<?xi64>, %n: i64, %k: index) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %k step %c1 {
        %x = memref.load %m[%i] : memref<?xi64>
        %zero = arith.constant 0 : i64
        %one = arith.constant 1 : i64
        %c7 = arith.constant 7 : i64
        %pos = arith.cmpi sgt, %x, %zero : i64
        scf.if %pos {
          %z = arith.cmpi eq, %n, %zero : i64
          %d = arith.select %z, %one, %n : i64
          %r = arith.remui %c7, %d : i64
          %q = arith.divui %x, %d : i64
          %s = arith.addi %r, %q : i64
          %u = arith.remui %c7, %n : i64
          memref.store %s, %m[%i] : memref<?xi64>
          memref.store %u, %m[%c0] : memref<?xi64>
        }
      }
      return
    }"""
    moved = _rewritten(text, hoist_invariant_divisions)
    before_loop, in_loop = moved.split("scf.for")
    assert "arith.remui %c7_i64, %1" in before_loop and "arith.select" in before_loop
    # the quotient depends on the loop; an unguarded remainder may trap: both stay
    assert "arith.divui %3, %1" in in_loop and "arith.remui %c7_i64, %arg1" in in_loop


def _aborts(prog, target, seed, sizes):
    import os
    os._exit(134)


def test_a_crashing_program_is_reproduced_in_a_child_process():
    """The shrinker of a failure that kills its process (kind "crash") runs
    each candidate in a child: the crash is an Outcome there, and the
    shrinker's own process lives on."""
    prog = P.generate(7)
    out = P.run_in_child(prog, "cpu", 7, P._sizes_for(7)[:1], runner=_aborts)
    assert (out.status, out.kind) == ("failed", "crash") and "exit code 134" in out.detail
    assert P.run_in_child(prog, "cpu", 7, P._sizes_for(7)[:1]).status == "pass"


def _sleeps_when_told(w):
    if w == "hangs":
        time.sleep(120)
    return w


def test_a_program_that_hangs_is_a_failure_not_a_stalled_campaign():
    """A lost program runs again alone with a time limit (a GPU campaign
    stalled on one program until its command's limit): past it, the process
    is killed and the program is a failure of kind "hang"."""
    t0 = time.monotonic()
    results = list(run_isolated(_sleeps_when_told, ["a", "hangs", "b"], 2,
                                lambda w, code: (w, code), limit=3))
    assert sorted(map(str, results)) == ["('hangs', 'timeout')", "a", "b"]
    assert time.monotonic() - t0 < 60
    assert P._died((7, "gpu"), "timeout")[2] == "hang"
