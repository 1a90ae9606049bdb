"""Numba's front end for functions our lowering calls: typed IR, no lowering.

Jitted functions and the pure-Python implementations of Numba's @overloads
that a compiled function calls are lowered into the same MLIR module; this
runs Numba's untyped, typed and parfor passes on them and stops.
"""
from __future__ import annotations

import contextlib
import warnings

from numba.core import compiler
from numba.core import ir as nir
from numba.core.compiler import CompilerBase, DefaultPassBuilder, Flags
from numba.core.compiler_machinery import AnalysisPass, PassManager, register_pass
from numba.core.cpu import ParallelOptions
from numba.core.errors import NumbaPerformanceWarning
from numba.core.typed_passes import (AnnotateTypes, IRLegalization,
                                     NoPythonSupportedFeatureValidation, ParforPass,
                                     PreLowerStripPhis, PreParforPass)
from numba.parfors import parfor as numba_parfor

from . import numba_fixes
from . import typing  # noqa: F401  (types the stand-ins of the rewrites)
from .loop_exits import SplitLoopExitEdges
from .optionals import UnwrapOptionalArrays
from .rewrites import MLIRPreParforPass, StepPrangeRewrite, SubstituteNumPyCalls
from ..lowering.values import BROADCAST_READ


@register_pass(mutates_CFG=True, analysis_only=False)
class QuietParforPass(ParforPass):
    """Numba's ParforPass without its "parallel=True was specified but..."
    warning: here parfor conversion is always on, whatever the user wrote.
    Its loops for in-place operators mark their read of the right operand
    (BROADCAST_READ) so that the lowering broadcasts it."""

    _name = "quiet_parfor_pass"

    def run_pass(self, state):
        with warnings.catch_warnings(), _broadcast_reads_marked():
            warnings.filterwarnings("ignore", message=r"(?s).*The keyword argument 'parallel=True'",
                                    category=NumbaPerformanceWarning)
            return super().run_pass(state)


# `A op= B` with B of A's dimensions: Numba's loop reads B[i, j] with A's
# indices, where NumPy broadcasts B's dimensions of size 1 (B of shape (m, 1)
# against A's (m, n)); array analysis lets a size known to be 1 through, and
# the loop then read past B's end (a wrong result, as in njit(parallel=True)).
# The read is marked here; lowering/expressions.py reads index 0 along B's
# dimensions of size 1 at run time.


@contextlib.contextmanager
def _broadcast_reads_marked():
    original = numba_parfor.ConvertInplaceBinop._inplace_binop_to_parfor

    def marking(self, equiv_set, loc, op, target, value):
        parfor = original(self, equiv_set, loc, op, target, value)
        for block in parfor.loop_body.values():
            for stmt in block.body:
                expr = getattr(stmt, "value", None)
                if isinstance(expr, nir.Expr) and expr.op == "getitem" and \
                        expr.value.name == value.name:
                    setattr(expr, BROADCAST_READ, True)
        return parfor
    numba_parfor.ConvertInplaceBinop._inplace_binop_to_parfor = marking
    try:
        yield
    finally:
        numba_parfor.ConvertInplaceBinop._inplace_binop_to_parfor = original


def typed_passes(state, name: str, prange: str = "parallel") -> PassManager:
    """Numba's untyped and typed passes (parfor conversion forced on) and
    the legalisation that its own lowering would be preceded by; our
    rewrites (rewrites.py) run before type inference and in place of
    Numba's PreParforPass; loop exits are split before the phis are stripped
    (loop_exits.py: else Numba's reduction analysis loses reductions updated
    in a loop inside a branch of a prange body).

    `prange="flags"` keeps the `prange` loops of a function compiled without
    `parallel=True` serial, as stock Numba runs them (a library may share
    scratch memory between their iterations); its array expressions and
    NumPy calls still become parallel loops, which are race-free."""
    asked = state.flags.auto_parallel.enabled
    state.flags.auto_parallel = ParallelOptions(
        True if asked or prange == "parallel" else {"prange": False})
    dpb = DefaultPassBuilder
    pm = PassManager(name)
    pm.passes.extend(dpb.define_untyped_pipeline(state).passes)
    pm.add_pass(StepPrangeRewrite, "prange with a step other than 1")
    pm.add_pass(SubstituteNumPyCalls, "stand-ins for NumPy calls")
    ours = {ParforPass: QuietParforPass, PreParforPass: MLIRPreParforPass}
    for cls, desc in dpb.define_typed_pipeline(state).passes:
        if cls is PreLowerStripPhis:
            pm.add_pass(SplitLoopExitEdges, "a block of its own for each joining loop exit")
        if cls is PreParforPass:
            pm.add_pass(UnwrapOptionalArrays, "casts of Optional arrays used as arrays")
        pm.add_pass(ours.get(cls, cls), desc)
    pm.add_pass(NoPythonSupportedFeatureValidation, "ensure features are supported")
    pm.add_pass(IRLegalization, "ensure IR is legal prior to lowering")
    pm.add_pass(AnnotateTypes, "annotate types")
    return pm


@register_pass(mutates_CFG=False, analysis_only=True)
class StopWithTypedIR(AnalysisPass):
    _name = "numba_mlir_gpu_stop_with_typed_ir"

    def __init__(self):
        AnalysisPass.__init__(self)

    def run_pass(self, state):
        raise compiler._EarlyPipelineCompletion(state)


class TypedIRPipeline(CompilerBase):
    def _compile_core(self):
        with numba_fixes.corrected():
            return super()._compile_core()

    def define_pipelines(self):
        pm = typed_passes(self.state, "numba_mlir_gpu_typed_ir")
        pm.add_pass(StopWithTypedIR, "stop with typed IR")
        pm.finalize()
        return [pm]


def typed_ir(py_func, argtypes, typingctx, targetctx):
    """The compiler state of `py_func` for `argtypes` after type inference
    and the parfor passes (func_ir, typemap, calltypes, return_type)."""
    flags = Flags()
    flags.nrt = True
    flags.no_cpython_wrapper = True
    flags.no_cfunc_wrapper = True
    return compiler.compile_extra(typingctx, targetctx, py_func, tuple(argtypes), None, flags,
                                  {}, pipeline_class=TypedIRPipeline)
