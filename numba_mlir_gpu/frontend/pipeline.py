"""`MLIRGPUPipeline`: Numba's front end, type inference and parfor passes,
then one pass of ours in place of Numba's lowering."""
from __future__ import annotations

import functools

from numba.core import funcdesc, types
from numba.core.compiler import CompilerBase, _LowerResult
from numba.core.compiler_machinery import LoweringPass, register_pass
from numba.core.typed_passes import NoPythonBackend

from ..compiler.driver import compile_state, takes_device_arrays
from ..lowering.errors import UnsupportedConstructError
from ..lowering.random_streams import host_draws
from ..runtime.device_arrays import device_result_type
from .fallback import (CompiledPath, FallbackFunction, HostLower, compile_loops,
                       fallback_allowed)
from . import nested_compiles, numba_fixes  # noqa: F401  (nested_compiles patches on import)
from .typed_ir import typed_ir, typed_passes
from .wrapper import EntryCallLower


def _cfunc_wrapper_possible(state) -> bool:
    """Numba's rule: no C wrapper for omitted or generator arguments, or an
    optional or generator result."""
    return not any(isinstance(t, (types.Omitted, types.Generator)) for t in state.args) and \
        not isinstance(state.return_type, (types.Optional, types.Generator))


@register_pass(mutates_CFG=True, analysis_only=False)
class MLIRLowering(LoweringPass):
    """Typed Numba IR and parfors -> MLIR -> OrcJIT; the Numba-side function
    is a call of the JIT-ed entry. A function whose host code our lowering
    cannot take is lowered by Numba, its parallel loops still through MLIR
    (fallback.py)."""

    _name = "mlir_gpu_lowering"

    def __init__(self):
        LoweringPass.__init__(self)

    def run_pass(self, state):
        if state.func_ir.is_generator:
            # Numba's generator lowering does not survive our passes; a
            # function of ours may still call a numba.njit generator
            raise UnsupportedConstructError(
                "generator functions (yield): compile this one with numba.njit; functions of "
                "numba-mlir-gpu can call it", state.func_ir.loc)
        try:
            compiled = compile_state(state, typed_ir)
        except UnsupportedConstructError as exc:
            if not fallback_allowed(state) or host_draws(state.func_ir, state.typemap):
                # (Numba's lowering of the host code would draw from its own generator)
                raise
            compiled = FallbackFunction(compile_loops(state, typed_ir, _construct_and_line(exc)))
        else:
            if compiled.target.name == "gpu" and takes_device_arrays(state.args):
                # compute follows data: arrays made from device arrays stay there
                state.return_type = device_result_type(state.return_type,
                                                       iter(compiled.plan.array_origins),
                                                       state.args)
        if state.library is None:
            state.library = state.targetctx.codegen().create_library(state.func_id.func_qualname)
            state.library.enable_object_caching()     # as Numba's lowering: cache=True
        library, targetctx, flags = state.library, state.targetctx, state.flags
        fndesc = funcdesc.PythonFunctionDescriptor.from_specialized_function(
            state.func_ir, state.typemap, state.return_type, state.calltypes,
            mangler=targetctx.mangler, inline=flags.forceinline, noalias=flags.noalias,
            abi_tags=[flags.get_mangle_string()])
        with targetctx.push_code_library(library):
            if isinstance(compiled, FallbackFunction):
                lower = HostLower(targetctx, library, fndesc, state.func_ir,
                                  metadata=state.metadata, resident=compiled.path.resident)
            else:
                lower = EntryCallLower(targetctx, library, fndesc, state.func_ir,
                                       metadata=state.metadata, compiled=compiled)
            lower.lower()
            if not flags.no_cpython_wrapper:
                lower.create_cpython_wrapper(flags.release_gil)
            if not flags.no_cfunc_wrapper and _cfunc_wrapper_possible(state):
                # the C entry a first-class function value calls (a dispatcher
                # passed as a types.FunctionType argument), as NativeLowering
                lower.create_cfunc_wrapper()
            env, call_helper = lower.env, lower.call_helper
        # The engine must outlive every call of the function: the library
        # (held by the dispatcher's overload) keeps it. The wrapper calls the
        # entry by a symbol registered in each process, so Numba's cache can
        # keep the wrapper; a process loading it from the cache re-JITs the
        # post-pipeline MLIR first (reload_init runs before linking).
        library._numba_mlir_gpu = compiled
        state.metadata["numba_mlir_gpu"] = compiled
        state.metadata["numba_mlir_gpu_path"] = (
            compiled.path if isinstance(compiled, FallbackFunction) else CompiledPath("mlir"))
        for jitted in _jitted(compiled):
            state.reload_init.append(jitted.reloader())
        if flags.no_compile:
            state["cr"] = _LowerResult(fndesc, call_helper, cfunc=None, env=env)
        else:
            cfunc = targetctx.get_executable(library, fndesc, env)
            targetctx.insert_user_function(cfunc, fndesc, [library])
            state["cr"] = _LowerResult(fndesc, call_helper, cfunc=cfunc, env=env)
        return True


def _jitted(compiled) -> list:
    if isinstance(compiled, FallbackFunction):
        return compiled.jitted
    return [compiled.jitted] if compiled.jitted is not None else []


def _construct_and_line(exc: UnsupportedConstructError) -> str:
    loc = getattr(exc, "loc", None)
    return exc.construct + (f", line {loc.line}" if loc is not None and loc.line else "")


PRANGE = ("parallel", "flags")


class MLIRGPUPipeline(CompilerBase):
    """Numba compiler pipeline that compiles through MLIR (GPU or CPU).

    Use as ``@njit(pipeline_class=MLIRGPUPipeline)``. Parfor conversion is on
    whether or not ``parallel=True`` is given.
    """

    target = None    # None: $NUMBA_MLIR_GPU_TARGET, else the GPU if present
    fallback = None  # None: $NUMBA_MLIR_GPU_FALLBACK (fallback.py), on unless "0"
    # "error", or "cpu": loops we cannot compile run with Numba's CPU lowering;
    # None: $NUMBA_MLIR_GPU_UNSUPPORTED_LOOPS, else "error" (fallback.py)
    unsupported_loops = None
    prange = "parallel"   # or "flags": serial without parallel=True (typed_ir.typed_passes)
    fp64 = None           # or "truncate"/"auto": float64 as float32 in kernels (compiler/fp64.py)

    def _compile_core(self):
        with numba_fixes.corrected():      # Numba bugs our parfor passes meet (numba_fixes.py)
            return super()._compile_core()

    def define_pipelines(self):
        self.state["numba_mlir_gpu_target"] = self.target
        self.state["numba_mlir_gpu_fallback"] = self.fallback
        self.state["numba_mlir_gpu_unsupported_loops"] = self.unsupported_loops
        self.state["numba_mlir_gpu_fp64"] = self.fp64
        pm = typed_passes(self.state, "numba_mlir_gpu", self.prange)
        pm.add_pass(MLIRLowering, "lower through MLIR")
        pm.add_pass(NoPythonBackend, "nopython mode backend")
        pm.finalize()
        return [pm]



@functools.lru_cache(maxsize=None)
def pinned_pipeline(changed: tuple) -> type:
    """MLIRGPUPipeline with the class attributes `changed` ((name, value)
    pairs) set. The class records them as `_pinned`, so a dispatcher pickles
    its pipeline as these settings and a process that unpickles it gets the
    same class back (a class made by `type()` cannot be pickled by name)."""
    if not changed:
        return MLIRGPUPipeline
    name = "_".join(["MLIRGPUPipeline"] + [f"{k}_{v}".replace("-", "_") for k, v in changed])
    return type(name, (MLIRGPUPipeline,), {**dict(changed), "_pinned": changed})
