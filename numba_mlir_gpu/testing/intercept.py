"""Route the compilations of Numba's own tests through MLIRGPUPipeline and
record every use of Numba's native lowering.

The rule (also in docs/numba-suite.md):

* A *top-level* compilation is one that is not nested in another compilation
  (what `njit(...)`, a dispatcher call, `compile_extra` or a pipeline object's
  `compile_extra`/`compile_ir` starts). A `Policy` decides whether it is *ours*
  or a *reference*:
  - ours: a pipeline of the default `Compiler` kind is switched to
    MLIRGPUPipeline (pinned to the runner's target); a custom pipeline class
    keeps its passes, but its native lowering pass runs our MLIRLowering;
  - reference (test_parfors*: njit without parallel=True, which those tests
    use as Numba's own CPU answer): Numba compiles it natively. It is never
    counted as ours: a test passes only if at least one compilation was ours.
* Any Numba `Lower` other than our entry wrapper that runs inside an *ours*
  compilation, or outside every compilation, is recorded as a violation: the
  test cannot pass.
* A compilation nested in a reference one that the policy calls ours (a
  parallel=True function called from plain njit code, an @overload with
  `jit_options={"parallel": True}`) is ours: the reference's machine code
  calls its entry as it would call Numba's.
* Other compilations nested in another one (Numba's type inference compiling a
  called jitted function or an @overload implementation) run as Numba runs
  them; our lowering never calls their machine code (it lowers their Python
  source into the same MLIR module). So that a test cannot later call such a
  natively compiled overload directly, the overloads that nested compilations
  add to dispatchers of user (non-`numba.*`) functions are removed again when
  the top-level compilation ends, and compiled again for the same argument
  types, top-level, where the policy makes that compilation ours (so the
  dispatcher's `signatures` stay what Numba's typing gave the call, with our
  code behind them; not counted in the test's record; one that fails stays
  removed, and a later call compiles afresh).
"""
from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable, Optional

from numba.core import errors, lowering, typed_passes
from numba.core.compiler import Compiler, CompilerBase
from numba.core.cpu import ParallelOptions
from numba.core.dispatcher import _DispatcherBase

from ..api import pipeline_for
from ..lowering.errors import MLIRCompilationError, UnsupportedConstructError
from ..frontend.fallback import HostLower
from ..frontend.pipeline import MLIRGPUPipeline, MLIRLowering
from ..frontend.wrapper import EntryCallLower

OURS, REFERENCE, NESTED = "ours", "reference", "nested"

# flags -> OURS or REFERENCE, for a top-level compilation
Policy = Callable[[object], str]


def all_ours(flags) -> str:
    return OURS


def parallel_is_ours(flags) -> str:
    """test_parfors*: parallel=True is the code under test; plain njit is
    Numba's CPU reference."""
    parallel = getattr(flags, "auto_parallel", None)
    return OURS if parallel is not None and parallel.enabled else REFERENCE


@dataclass
class LoweringError:
    kind: str          # "unsupported" (ours or a Numba error from inside our pass) or "failed"
    message: str


@dataclass
class TestRecord:
    """What one test made the compiler do."""
    ours_compiles: int = 0          # top-level compilations given to MLIRGPUPipeline
    ours_lowered: int = 0           # ... whose MLIR lowering completed
    ours_fallbacks: int = 0         # ... of which Numba lowered the host code (fallback.py)
    cpu_loops: int = 0              # parallel loops given to Numba's CPU parfor lowering
    reference_compiles: int = 0
    nested_native: int = 0
    violations: list = field(default_factory=list)
    lowering_errors: list = field(default_factory=list)


@dataclass
class _Frame:
    mode: str


class Interceptor:
    """Installs the patches once; `record` is the current test's record."""

    def __init__(self, policy: Policy, target: str):
        self.policy = policy
        self.target = target
        self.pipeline = pipeline_for(target)
        self.record: Optional[TestRecord] = None
        self._local = threading.local()
        self._lock = threading.Lock()
        self._pending_drops: list = []
        self._recompiling: set = set()

    # -- state -------------------------------------------------------------

    def _frames(self) -> list:
        frames = getattr(self._local, "frames", None)
        if frames is None:
            frames = self._local.frames = []
        return frames

    def current_mode(self) -> Optional[str]:
        frames = self._frames()
        return frames[-1].mode if frames else None

    def _note(self, attr: str, value=1) -> None:
        record = self.record
        if record is None:
            return
        with self._lock:
            if isinstance(getattr(record, attr), list):
                getattr(record, attr).append(value)
            else:
                setattr(record, attr, getattr(record, attr) + value)

    # -- patches -----------------------------------------------------------

    def install(self) -> None:
        icpt = self
        original_core = CompilerBase._compile_core
        original_native = typed_passes.BaseNativeLowering.run_pass
        original_lower = lowering.BaseLower.lower
        original_mlir = MLIRLowering.run_pass
        original_add = _DispatcherBase.add_overload

        def _compile_core(pipeline):
            frames = icpt._frames()
            if frames and not (frames[-1].mode == REFERENCE
                               and icpt.policy(pipeline.state.flags) == OURS):
                mode = NESTED
            elif isinstance(pipeline, MLIRGPUPipeline):
                mode = OURS
            else:
                mode = icpt.policy(pipeline.state.flags)
                if mode == OURS and type(pipeline).define_pipelines is Compiler.define_pipelines:
                    # Numba's default passes: use ours instead (same object, so
                    # a test that reads pipeline.state afterwards still can).
                    pipeline.__class__ = icpt.pipeline
            icpt._note({OURS: "ours_compiles", REFERENCE: "reference_compiles",
                        NESTED: "nested_native"}[mode])
            frames.append(_Frame(mode))
            try:
                return original_core(pipeline)
            finally:
                frames.pop()
                if not frames:
                    icpt._drop_nested_overloads()

        def native_run_pass(pass_, state):
            if icpt.current_mode() == OURS:
                # A custom pipeline in an ours compilation: our lowering in
                # place of Numba's.
                state["numba_mlir_gpu_target"] = icpt.target
                return MLIRLowering().run_pass(state)
            return original_native(pass_, state)

        def lower(lowerer):
            if isinstance(lowerer, HostLower):      # the fallback (--fallback): ours too
                icpt._note("ours_fallbacks")
            elif not isinstance(lowerer, EntryCallLower):
                mode = icpt.current_mode()
                if mode == OURS or mode is None:
                    icpt._note("violations", f"Numba's native lowering ({type(lowerer).__name__}) "
                               f"ran {'outside any compilation' if mode is None else 'in place of ours'} "
                               f"for {lowerer.fndesc.qualname}")
            return original_lower(lowerer)

        def mlir_run_pass(pass_, state):
            try:
                result = original_mlir(pass_, state)
            except Exception as exc:   # noqa: BLE001  (recorded, then raised on)
                icpt._note("lowering_errors", classify_lowering_error(exc))
                raise
            icpt._note("ours_lowered")
            path = state.metadata.get("numba_mlir_gpu_path")
            for loop in (path.loops if path is not None else ()):
                if loop.compiled is None:
                    icpt._note("cpu_loops")
            return result

        def add_overload(dispatcher, cres):
            original_add(dispatcher, cres)
            if icpt._frames() and _is_user_function(dispatcher):
                icpt._pending_drops.append((dispatcher, tuple(cres.signature.args)))

        CompilerBase._compile_core = _compile_core
        typed_passes.BaseNativeLowering.run_pass = native_run_pass
        lowering.BaseLower.lower = lower
        MLIRLowering.run_pass = mlir_run_pass
        _DispatcherBase.add_overload = add_overload

    def _drop_nested_overloads(self) -> None:
        drops, self._pending_drops = self._pending_drops, []
        drop_overloads(drops)
        self._compile_ours(drops)

    def _compile_ours(self, drops: list) -> None:
        """Compile each dropped overload again, top-level, where the policy
        makes that compilation ours: the dispatcher keeps the signature Numba's
        typing gave the call (`arr_expr.signatures` in test_array_exprs'
        TestOptionals: an Optional parameter), with our code behind it. Not
        counted in the test's record; one that fails stays dropped (a call
        compiles it afresh, and fails there, as before)."""
        for dispatcher, args in drops:
            key = (id(dispatcher), args)
            parallel = ParallelOptions(dispatcher.targetoptions.get("parallel", False))
            if key in self._recompiling or args in dispatcher.overloads or \
                    self.policy(SimpleNamespace(auto_parallel=parallel)) != OURS:
                continue
            self._recompiling.add(key)
            record, self.record = self.record, None
            try:
                dispatcher.compile(args)
            except Exception:   # noqa: BLE001  (left dropped, see above)
                pass
            finally:
                self.record = record
                self._recompiling.discard(key)


def drop_overloads(drops: list) -> None:
    """Remove each (dispatcher, argument types) overload that a nested
    compilation added, keeping the dispatcher's others."""
    for dispatcher, args in drops:
        if args not in dispatcher.overloads:
            continue
        keep = [c for k, c in dispatcher.overloads.items() if k != args]
        dispatcher._reset_overloads()
        for cres in keep:
            _DispatcherBase.add_overload(dispatcher, cres)


def _is_user_function(dispatcher) -> bool:
    py_func = getattr(dispatcher, "py_func", None)
    module = getattr(py_func, "__module__", None) or ""
    return not module.startswith("numba.") or module.startswith("numba.tests")


def classify_lowering_error(exc: BaseException) -> LoweringError:
    """Our UnsupportedConstructError and Numba errors raised from inside our
    pass are "unsupported"; invalid MLIR and Python errors are failures."""
    lines = [l.strip() for l in f"{type(exc).__name__}: {exc}".strip().splitlines() if l.strip()]
    # Numba prefixes "Failed in ... pipeline (step: ...)"; the cause follows it
    while len(lines) > 1 and (lines[0].endswith(":") or "Failed in " in lines[0]):
        lines = [f"{type(exc).__name__}: {lines[1]}"] + lines[2:]
    first = lines[0] if lines else type(exc).__name__
    if first.endswith(":") and len(lines) > 1:
        first += " " + lines[1]
    if isinstance(exc, UnsupportedConstructError):
        return LoweringError("unsupported", first)
    if isinstance(exc, errors.NumbaError) and not isinstance(exc, MLIRCompilationError):
        return LoweringError("unsupported", first)
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" ({tb[-1].name} in {tb[-1].filename.rsplit('/', 1)[-1]})" if tb else ""
    return LoweringError("failed", first + where)
