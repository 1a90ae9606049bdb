"""Route a library's `numba.njit` / `numba.jit` compilations through
MLIRGPUPipeline, and record what each compilation did (docs/libraries.md).

As a pytest plugin, on any library's own suite:

    python -m pytest -p numba_mlir_gpu.testing.library_shim [--mlir-shim-report R.json] tests/

or from Python, before the library compiles anything:

    from numba_mlir_gpu.testing import library_shim
    library_shim.install()            # settings from the environment, below

The rule:

* A *top-level* compilation of a `numba.njit` / `numba.jit` dispatcher (a
  CPU `Dispatcher` whose pipeline is Numba's default `Compiler`, not object
  mode), of a function whose module is routed, compiles with
  `pipeline_for(target, fallback=True, unsupported_loops=..., prange=...)` instead: the
  whole function through MLIR, else (fallback) Numba-lowered host code
  around MLIR loops. Top-level: not nested in another compilation (what a
  call, `dispatcher.compile(sig)` or an eager signature starts).
* Compilations nested in another one (type inference compiling a called
  jitted function or an `@overload`) run as Numba runs them; our lowering
  lowers callees from their Python source into the same MLIR module and
  never calls that machine code. The overloads nested compilations add to
  routed dispatchers are removed when the top-level compilation ends, so a
  later direct call compiles afresh, through ours.
* A dispatcher made without `parallel=True` keeps its `prange` loops serial,
  as stock Numba runs them (its array expressions and NumPy calls still
  become parallel loops): a library may rely on that, sharing scratch
  memory between iterations (docs/libraries.md, A7). A library known to be
  race-free can have every prange converted (NUMBA_MLIR_GPU_SHIM_PRANGE).
* `@vectorize`, `@guvectorize`, `@cfunc`, `@stencil` (as its own
  dispatcher) and `numba.cuda` stay Numba's; so does a dispatcher given an
  explicit `pipeline_class`, and object mode (`forceobj=True`).

Environment (all optional):

  NUMBA_MLIR_GPU_SHIM          "ours" (default) routes; "stock" routes nothing and
                               only records test outcomes (the reference run)
  NUMBA_MLIR_GPU_TARGET        cpu | gpu | compile-only (the pipeline's own variable)
  NUMBA_MLIR_GPU_SHIM_LOOPS    unsupported_loops: "cpu" (default: a parallel loop our
                               lowering cannot take runs with Numba's parfor lowering,
                               recorded) or "error"
  NUMBA_MLIR_GPU_SHIM_PRANGE   "flags" (default: prange parallel only with parallel=True, as
                               stock Numba) or "parallel" (every prange a parallel loop)
  NUMBA_MLIR_GPU_SHIM_MODULES  comma-separated module prefixes to route (default: every
                               module but numba's own)
  NUMBA_MLIR_GPU_SHIM_REPORT   write the JSON record there at the end of the session

Each compilation record: the test that triggered it, the function and
signature, the path ("mlir": whole function; "fallback": Numba host code
with MLIR loops; "error": the compilation raised), the construct that sent
it to the fallback, per top-level parallel loop its path (mlir or
numba-cpu, with the reason), and an error out of our pass, classified as
"unsupported" (a clean UnsupportedConstructError or a Numba error) or
"internal" (invalid MLIR, a verifier failure, a Python exception).
"""
from __future__ import annotations

import inspect
import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

ENV_MODE = "NUMBA_MLIR_GPU_SHIM"
ENV_LOOPS = "NUMBA_MLIR_GPU_SHIM_LOOPS"
ENV_MODULES = "NUMBA_MLIR_GPU_SHIM_MODULES"
ENV_PRANGE = "NUMBA_MLIR_GPU_SHIM_PRANGE"
ENV_REPORT = "NUMBA_MLIR_GPU_SHIM_REPORT"

COLLECTION = "<import or collection>"


@dataclass
class Loop:
    line: Optional[int]
    path: str                        # "mlir" or "numba-cpu"
    reason: Optional[str] = None


@dataclass
class Compilation:
    test: str
    function: str                    # module.qualname
    signature: str
    path: str = "error"              # "mlir", "fallback" or "error"
    target: Optional[str] = None     # where the MLIR code runs: "cpu" or "gpu"
    reason: Optional[str] = None     # the construct that sent it to the fallback
    parfors: int = 0                 # top-level parallel loops (parfors) of the function
    loops: list = field(default_factory=list)          # Loop, fallback only
    error_kind: Optional[str] = None  # "unsupported", "internal" or "numba" (outside our pass)
    error: Optional[str] = None
    seconds: float = 0.0

    @property
    def loops_mlir(self) -> int:
        if self.path == "mlir":
            return self.parfors
        return sum(loop["path"] == "mlir" if isinstance(loop, dict) else loop.path == "mlir"
                   for loop in self.loops)


class Shim:
    """The patches and the record; one per process (`install`)."""

    def __init__(self, mode: str = "ours", target: Optional[str] = None,
                 unsupported_loops: str = "cpu", modules: Optional[list] = None,
                 prange: str = "flags"):
        self.mode = mode
        self.prange = prange
        self.target = target
        self.unsupported_loops = unsupported_loops
        self.modules = [m for m in (modules or []) if m]
        self.test = COLLECTION
        self.compilations: list[Compilation] = []
        self.outcomes: dict[str, str] = {}
        self.messages: dict[str, str] = {}
        self._depth = 0
        self._current: Optional[Compilation] = None
        self._drops: list = []
        self._lock = threading.RLock()
        self.pipeline = None
        self.saved_at = time.time()

    # -- which functions --------------------------------------------------------

    def routes(self, py_func) -> bool:
        module = getattr(py_func, "__module__", None) or ""
        if module.startswith(("numba.", "numba_mlir_gpu.")) or module in ("numba",):
            return False
        return not self.modules or any(module == m or module.startswith(m + ".")
                                       for m in self.modules)

    # -- patches -------------------------------------------------------------------

    def install(self) -> None:
        if self.mode != "ours":
            return
        from numba.core import compiler, registry
        from numba.core.dispatcher import _DispatcherBase, _FunctionCompiler
        from numba.parfors.parfor import Parfor

        from ..api import pipeline_for
        from ..frontend.pipeline import MLIRLowering

        shim = self
        self.pipeline = pipeline_for(self.target, True, self.unsupported_loops, self.prange)
        original_fc = _FunctionCompiler._compile_core
        original_core = compiler.CompilerBase._compile_core
        original_mlir = MLIRLowering.run_pass
        original_add = _DispatcherBase.add_overload

        def fc_compile_core(fc, args, return_type):
            if not (shim._depth == 0 and type(fc) is _FunctionCompiler
                    and fc.pipeline_class is compiler.Compiler
                    and fc.targetdescr is registry.cpu_target
                    and not fc.targetoptions.get("forceobj")
                    and fc.targetoptions.get("nopython", True) is not False
                    and not inspect.isgeneratorfunction(fc.py_func)   # refused by ours
                    and shim.routes(fc.py_func)):
                return original_fc(fc, args, return_type)
            rec = Compilation(shim.test, _name(fc.py_func), _signature(args))
            saved, fc.pipeline_class = fc.pipeline_class, shim.pipeline
            shim._current, start = rec, time.perf_counter()
            try:
                cres = original_fc(fc, args, return_type)
            except BaseException as exc:
                if rec.error is None:
                    rec.error_kind, rec.error = "numba", _first_line(exc)
                raise
            else:
                _fill(rec, cres.metadata)
                return cres
            finally:
                fc.pipeline_class = saved
                rec.seconds = round(time.perf_counter() - start, 3)
                shim._current = None
                with shim._lock:
                    shim.compilations.append(rec)

        def core(pipeline):
            shim._depth += 1
            try:
                return original_core(pipeline)
            finally:
                shim._depth -= 1
                if shim._depth == 0:
                    shim._drop_nested_overloads()

        def mlir_run_pass(pass_, state):
            rec = shim._current
            if rec is not None and shim._depth == 1:
                rec.parfors = sum(isinstance(stmt, Parfor) for block in state.func_ir.blocks.values()
                                  for stmt in block.body)
            try:
                return original_mlir(pass_, state)
            except Exception as exc:   # noqa: BLE001  (recorded, then raised on)
                if rec is not None and rec.error is None:
                    rec.error_kind, rec.error = classify(exc)
                raise

        def add_overload(dispatcher, cres):
            original_add(dispatcher, cres)
            if shim._depth and shim.routes(getattr(dispatcher, "py_func", None)):
                shim._drops.append((dispatcher, tuple(cres.signature.args)))

        self._restore = [(_FunctionCompiler, "_compile_core", original_fc),
                         (compiler.CompilerBase, "_compile_core", original_core),
                         (MLIRLowering, "run_pass", original_mlir),
                         (_DispatcherBase, "add_overload", original_add)]
        _FunctionCompiler._compile_core = fc_compile_core
        compiler.CompilerBase._compile_core = core
        MLIRLowering.run_pass = mlir_run_pass
        _DispatcherBase.add_overload = add_overload

    def uninstall(self) -> None:
        for owner, name, original in reversed(getattr(self, "_restore", [])):
            setattr(owner, name, original)
        self._restore = []

    def _drop_nested_overloads(self) -> None:
        from .intercept import drop_overloads       # the rule of Numba's own suite
        drops, self._drops = self._drops, []
        drop_overloads(drops)

    # -- the record ----------------------------------------------------------------

    def report(self) -> dict:
        return {
            "mode": self.mode,
            "target": self.target,
            "unsupported_loops": self.unsupported_loops,
            "prange": self.prange,
            "modules": self.modules,
            "outcomes": self.outcomes,
            "messages": self.messages,
            "compilations": [dict(asdict(c), loops_mlir=c.loops_mlir) for c in self.compilations],
        }

    def write(self, path: str) -> None:
        with open(path + ".tmp", "w") as f:
            json.dump(self.report(), f, indent=1)
        os.replace(path + ".tmp", path)


def _name(py_func) -> str:
    return f"{getattr(py_func, '__module__', '?')}.{getattr(py_func, '__qualname__', '?')}"


def _signature(args) -> str:
    return "(" + ", ".join(str(a) for a in args) + ")"


def _first_line(exc: BaseException) -> str:
    from .intercept import classify_lowering_error
    return classify_lowering_error(exc).message[:400]


def classify(exc: BaseException) -> tuple[str, str]:
    """("unsupported" | "internal", first line of the message)."""
    from .intercept import classify_lowering_error
    err = classify_lowering_error(exc)
    return ("internal" if err.kind == "failed" else "unsupported"), err.message[:400]


def _fill(rec: Compilation, metadata) -> None:
    path = metadata.get("numba_mlir_gpu_path")
    compiled = metadata.get("numba_mlir_gpu")
    if path is None:          # e.g. loaded from a cache written by another pipeline
        rec.path = "not-ours"
        return
    rec.path = path.path
    rec.reason = path.reason
    if path.path == "mlir":
        rec.target = getattr(getattr(compiled, "target", None), "name", None)
        return
    rec.loops = [Loop(loop.line, loop.path, loop.reason) for loop in path.loops]
    targets = {getattr(getattr(loop.compiled, "target", None), "name", None)
               for loop in path.loops if loop.compiled is not None}
    rec.target = next(iter(targets)) if len(targets) == 1 else None
    rec.parfors = max(rec.parfors, len(path.loops))


_SHIM: Optional[Shim] = None


def install(mode: Optional[str] = None, target: Optional[str] = None,
            unsupported_loops: Optional[str] = None, modules: Optional[list] = None,
            prange: Optional[str] = None) -> Shim:
    """Install the shim once per process; arguments override the environment."""
    global _SHIM
    if _SHIM is None:
        env_modules = os.environ.get(ENV_MODULES, "")
        _SHIM = Shim(mode or os.environ.get(ENV_MODE, "ours"),
                     target or os.environ.get("NUMBA_MLIR_GPU_TARGET") or None,
                     unsupported_loops or os.environ.get(ENV_LOOPS, "cpu"),
                     modules if modules is not None else env_modules.split(","),
                     prange or os.environ.get(ENV_PRANGE, "flags"))
        _SHIM.install()
    return _SHIM


def current() -> Optional[Shim]:
    return _SHIM


# -- pytest plugin -------------------------------------------------------------------

def pytest_addoption(parser):
    group = parser.getgroup("numba-mlir-gpu library shim")
    group.addoption("--mlir-shim", choices=("ours", "stock"), default=None,
                    help=f"route njit compilations through MLIRGPUPipeline (ours) or only "
                         f"record outcomes (stock); default ${ENV_MODE} or ours")
    group.addoption("--mlir-target", default=None, help="cpu, gpu or compile-only")
    group.addoption("--mlir-shim-report", default=None, help="write the JSON record here")


def pytest_configure(config):
    global _CONFIG
    _CONFIG = config
    install(config.getoption("--mlir-shim"), config.getoption("--mlir-target"))


def pytest_runtest_setup(item):
    if _SHIM is not None:
        _SHIM.test = item.nodeid


def pytest_runtest_teardown(item):
    if _SHIM is not None:
        _SHIM.test = COLLECTION


def pytest_runtest_logreport(report):
    shim = _SHIM
    if shim is None:
        return
    previous = shim.outcomes.get(report.nodeid)
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    elif report.when == "call" or report.outcome != "passed":
        outcome = {"passed": "passed", "failed": "failed", "skipped": "skipped"}[report.outcome]
        if report.when != "call" and report.failed:
            outcome = "error"
    else:
        outcome = previous or "passed"
    if previous in ("failed", "error") and outcome == "passed":
        return          # a teardown does not undo a failure
    if previous == "failed" and outcome == "error":
        return
    shim.outcomes[report.nodeid] = outcome
    if report.failed:
        shim.messages[report.nodeid] = _short(report)
    if report.when == "teardown" and time.time() - shim.saved_at > 20:
        _save(shim)     # a run killed from outside still leaves most of its record


_CONFIG = None


def _short(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.strip().splitlines()[0][:300] if crash.message.strip() else ""
    return str(report.longrepr).strip().splitlines()[-1][:300] if report.longrepr else ""


def _save(shim) -> None:
    shim.saved_at = time.time()
    path = (_CONFIG.getoption("--mlir-shim-report") if _CONFIG else None) or os.environ.get(ENV_REPORT)
    if path:
        # pytest-xdist: one file per worker (its config has `workerinput`; the
        # environment variable would also name a pytest run inside a worker)
        worker = getattr(_CONFIG, "workerinput", {}).get("workerid")
        shim.write(f"{path}.{worker}" if worker else path)


def pytest_sessionfinish(session):
    if _SHIM is not None:
        _save(_SHIM)
