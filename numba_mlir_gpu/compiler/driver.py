"""One compilation: typed Numba IR -> MLIR -> pass pipeline -> JIT."""
from __future__ import annotations

import contextvars
import dataclasses
import itertools
import os
import re
from dataclasses import dataclass
from typing import Callable, Optional

from numba.core import config as numba_config

from .. import parallel, rules  # noqa: F401  (register the parfor statement and the rules)
from .._mlir import ir, new_context
from ..lowering import ModuleLowering
from ..lowering.errors import MLIRCompilationError
from ..lowering.fastmath import apply_fastmath, fastmath_flags
from ..lowering.types import flat_types
from ..lowering.values import ReturnPlan
from ..runtime import cuda
from ..runtime.device_arrays import DeviceArrayType
from ..targets import TargetChoice, strategy_for
from ..targets.choice import choose_target
from . import passes
from .fp64 import AUTO_BELOW_RATE
from .gpu_binaries import archs_from_env
from .jit import JitFunction, add_allocator, extract_ptx, for_another_process, jit, run_pipeline

ENV_DUMP = "NUMBA_MLIR_GPU_DUMP"
_counter = itertools.count()


@dataclass
class CompiledFunction:
    """Everything one signature compiled to; kept alive with the overload."""
    name: str
    target: TargetChoice
    plan: ReturnPlan
    input_mlir: str            # as lowered from Numba
    lowered_mlir: str          # after the pass pipeline
    jitted: Optional[JitFunction]
    exceptions: list           # (class, args) per non-zero status code
    gpu_options: Optional[passes.GPUOptions] = None
    _ptx: Optional[list] = None
    context: object = None     # the MLIR context the texts came from

    @property
    def ptx(self) -> list[str]:
        """PTX of each GPU module (built on demand with format=isa)."""
        if self.gpu_options is None:
            return []
        if self._ptx is None:
            self._ptx = build_ptx(self.input_mlir, self.gpu_options)
        return self._ptx


def takes_device_arrays(argtypes) -> bool:
    """Does the call get arrays that live on the GPU? Its results stay there."""
    return any(isinstance(t, DeviceArrayType) for a in argtypes for t in flat_types(a))


def cpu_threads() -> int:
    """Numba's thread count (NUMBA_NUM_THREADS), which the CPU target follows."""
    from numba.core import config
    return max(1, int(config.NUMBA_NUM_THREADS))


@dataclass(frozen=True)
class AheadOfTime:
    """A GPU build for other machines (aot/): these architectures, these
    device libraries, no GPU needed and nothing JIT-ed here."""
    chips: tuple
    link: tuple = ()


AHEAD_OF_TIME: contextvars.ContextVar = contextvars.ContextVar("numba_mlir_gpu_aot", default=None)


def gpu_options_for(choice: TargetChoice, fp64: Optional[str] = None) -> passes.GPUOptions:
    """GPU builds: the device's architecture, or $NUMBA_MLIR_GPU_ARCH's list;
    compile-only: PTX for sm_90 (or the list), no ptxas. `fp64`: "native"
    (None), "truncate", or "auto" (truncate where the GPU runs float64 slowly)."""
    aot = AHEAD_OF_TIME.get()
    if aot is not None:
        options = passes.GPUOptions(chips=aot.chips, link=aot.link)
    elif choice.name == "gpu":
        major, minor = cuda.compute_capability()
        options = passes.GPUOptions(chips=archs_from_env() or (f"sm_{major}{minor}",))
    else:
        options = passes.GPUOptions(chips=archs_from_env() or ("sm_90",), sass=False)
    truncate = fp64 == "truncate" or (fp64 == "auto" and choice.name == "gpu" and aot is None
                                      and cuda.fp64_rate_ratio() > AUTO_BELOW_RATE)
    return passes.options_from_env(dataclasses.replace(options, truncate_fp64=truncate))


def _lower(state, choice: TargetChoice, name: str, typed_ir: Callable):
    context = new_context()
    with context, ir.Location.unknown():
        module = ir.Module.create()
        mlower = ModuleLowering(module, strategy_for(choice), state.typingctx, state.targetctx,
                                typed_ir, boundscheck=_boundscheck(state.flags),
                                error_model=state.flags.error_model)
        lowerer = mlower.lower_entry(state, name)
        try:
            module.operation.verify()
        except ir.MLIRError as exc:
            _dump_invalid(module, name)
            raise MLIRCompilationError(
                f"numba-mlir-gpu generated invalid MLIR (a bug; please report it): {exc}"
            ) from None
    return (context, module, lowerer.plan, mlower.exceptions.entries, mlower.callee_fastmath,
            mlower.device_libraries)


def _boundscheck(flags) -> bool:
    """NUMBA_BOUNDSCHECK (0 or 1) wins over the njit option, as in Numba."""
    if numba_config.BOUNDSCHECK is not None:
        return bool(numba_config.BOUNDSCHECK)
    return bool(flags.boundscheck)


def compile_state(state, typed_ir: Callable) -> CompiledFunction:
    """Compile the typed function of Numba's compiler `state`; `typed_ir`
    runs Numba's front end on the functions it calls (frontend/typed_ir.py)."""
    choice = choose_target(state.get("numba_mlir_gpu_target"))
    name = re.sub(r"\W", "_", state.func_id.func_name) + f"_{next(_counter)}"
    context, module, plan, exceptions, fastmath_of_callees, libraries = _lower(
        state, choice, name, typed_ir)
    with context:
        apply_fastmath(module, fastmath_flags(state.flags.fastmath), fastmath_of_callees)
        input_mlir = str(module)
        options = gpu_options_for(choice, state.get("numba_mlir_gpu_fp64")) \
            if choice.builds_gpu_code else None
        if options is not None and libraries:   # the device functions' bitcode
            options = dataclasses.replace(options, link=tuple(sorted(set(options.link) | libraries)))
        _run_pipelines(module, options, choice)
        lowered = str(module)
        ptx = extract_ptx(module) if options and not options.sass else None
        device_results = takes_device_arrays(state.args)
        if AHEAD_OF_TIME.get() is not None:
            jitted = for_another_process(module, name, device_results)
        elif choice.runs:
            jitted = jit(module, name, gpu=choice.builds_gpu_code, device_results=device_results)
        else:
            jitted = None
    compiled = CompiledFunction(name, choice, plan, input_mlir, lowered, jitted, exceptions,
                                options, ptx, context)
    _dump(compiled)
    return compiled


def _run_pipelines(module, options, choice: TargetChoice):
    """The pass pipeline of the target, run on `module`."""
    add_allocator(module, gpu=choice.builds_gpu_code)
    run_pipeline(module, passes.gpu_pipeline(options) if options else
                 passes.cpu_pipeline(cpu_threads()))


def build_ptx(input_mlir: str, options: passes.GPUOptions) -> list[str]:
    isa = dataclasses.replace(options, sass=False)
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(input_mlir)
        add_allocator(module, gpu=True)
        run_pipeline(module, passes.gpu_pipeline(isa))
        return extract_ptx(module)


def _dump_invalid(module: ir.Module, name: str) -> None:
    """The module that failed verification, printed generically (its custom
    forms may not print), to find the op a verifier error names."""
    folder = os.environ.get(ENV_DUMP)
    if folder:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name + ".invalid.mlir"), "w") as f:
            f.write(module.operation.get_asm(print_generic_op_form=True, assume_verified=True))


def _dump(compiled: CompiledFunction) -> None:
    folder = os.environ.get(ENV_DUMP)
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    base = os.path.join(folder, compiled.name)
    with open(base + ".input.mlir", "w") as f:
        f.write(compiled.input_mlir)
    with open(base + ".lowered.mlir", "w") as f:
        f.write(compiled.lowered_mlir)
    for i, text in enumerate(compiled.ptx):
        with open(f"{base}.{i}.ptx", "w") as f:
            f.write(text)
