"""Host fallback: Numba lowers the host code, MLIR every parallel loop.

When the whole-function lowering meets a construct it does not support
(typed lists, strings, `try`, a NumPy function without a rule...), Numba's
own lowering compiles the function instead, and each top-level parfor is
compiled through our pipeline as a function of its own and called from
Numba's code: Numba's `parfor.lowerer` hook, which its parfor lowering calls
in place of its own. A loop whose body our lowering cannot take is an error
naming it, unless the user asked for such loops to run on the CPU
(`unsupported_loops="cpu"`: Numba's parfor lowering, with a warning).

The outlined loop is a function of the variables it reads from the host
code (its live-ins, in a fixed order) returning a tuple of those it defines
that the host code uses afterwards (reduction results): a prologue binding
the inputs (mostly `Arg` assignments; compile-time objects, slices and
lists are bound otherwise, see loop_inputs.py), the parfor itself, `return
(outputs...)`. Its typemap and call types are the host function's own, plus
the prologue's.
"""
from __future__ import annotations

import copy
import functools
import os
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

from numba.core import cgutils, errors, ir, types
from numba.core.analysis import compute_use_defs
from numba.core.compiler import StateDict
from numba.core.ir_utils import build_definitions
from numba.parfors.parfor import Parfor
from numba.parfors import parfor_lowering
from numba.parfors.parfor_lowering import ParforLower

from ..compiler.driver import CompiledFunction, compile_state
from ..lowering.argument_writes import written_arguments
from ..lowering.errors import UnsupportedConstructError
from ..targets.choice import choose_target
from ..runtime.device_arrays import DeviceArrayType
from .loop_inputs import (Binding, Parameter, bind_inputs, host_definitions,
                          mark_written_list, parameter_value)
from .residency import METADATA, DeviceMirrors, device_type, resident_candidates
from .wrapper import CompileOnlyError, EntryCalls

ENV_FALLBACK = "NUMBA_MLIR_GPU_FALLBACK"
ENV_UNSUPPORTED_LOOPS = "NUMBA_MLIR_GPU_UNSUPPORTED_LOOPS"
UNSUPPORTED_LOOPS = ("error", "cpu")


class FallbackWarning(errors.NumbaPerformanceWarning):
    """A parallel loop runs with Numba's CPU lowering instead of through MLIR."""


def fallback_allowed(state) -> bool:
    """The njit option `fallback`, else $NUMBA_MLIR_GPU_FALLBACK (on unless "0")."""
    option = state.get("numba_mlir_gpu_fallback")
    if option is not None:
        return bool(option)
    return os.environ.get(ENV_FALLBACK, "1").strip() != "0"


def unsupported_loops_setting(option: Optional[str]) -> str:
    """The njit option `unsupported_loops`, else $NUMBA_MLIR_GPU_UNSUPPORTED_LOOPS,
    else "error"."""
    if option is not None:
        return option
    value = os.environ.get(ENV_UNSUPPORTED_LOOPS, "").strip() or "error"
    if value not in UNSUPPORTED_LOOPS:
        raise ValueError(f"${ENV_UNSUPPORTED_LOOPS} must be one of "
                         f"{', '.join(UNSUPPORTED_LOOPS)}, not {value!r}")
    return value


@dataclass
class LoopPath:
    """How one top-level parallel loop of a fallback function runs."""
    line: Optional[int]
    inputs: list[str]
    outputs: list[str]
    compiled: Optional[CompiledFunction]      # None: Numba's CPU parfor lowering
    reason: Optional[str] = None              # why not through MLIR
    # the arguments of its MLIR function: inputs or parts of them (slices' integers)
    parameters: list[Parameter] = field(default_factory=list)
    written: set[int] = field(default_factory=set)   # parameters whose elements it may write

    @property
    def path(self) -> str:
        return "mlir" if self.compiled is not None else "numba-cpu"


@dataclass
class CompiledPath:
    """Which path a compiled signature took, and why."""
    path: str                                  # "mlir" (whole function) or "fallback"
    reason: Optional[str] = None               # the construct that sent it to the fallback
    loops: list[LoopPath] = field(default_factory=list)
    # host arrays kept on the GPU across the loops (residency.py): name -> written
    resident: dict = field(default_factory=dict)

    def summary(self) -> str:
        if self.path == "mlir":
            return "numba-mlir-gpu: the whole function through MLIR"
        through = sum(loop.compiled is not None for loop in self.loops)
        return (f"numba-mlir-gpu: host code lowered by Numba ({self.reason}); "
                f"{through} of {len(self.loops)} parallel loops through MLIR")


@dataclass
class FallbackFunction:
    """What a fallback signature compiled to: its loops' MLIR functions."""
    path: CompiledPath

    @property
    def loops(self) -> list[CompiledFunction]:
        return [loop.compiled for loop in self.path.loops if loop.compiled is not None]

    @property
    def input_mlir(self) -> str:
        return "\n".join(c.input_mlir for c in self.loops)

    @property
    def lowered_mlir(self) -> str:
        return "\n".join(c.lowered_mlir for c in self.loops)

    @property
    def ptx(self) -> list[str]:
        return [text for c in self.loops for text in c.ptx]

    @property
    def jitted(self) -> list:
        return [c.jitted for c in self.loops if c.jitted is not None]


def compile_loops(state, typed_ir: Callable, reason: str) -> CompiledPath:
    """Compile each top-level parfor of `state` through MLIR and hook it
    into Numba's parfor lowering; the host code is checked for reads of GPU
    arrays, which Numba's code cannot make. On the GPU, host arrays the host
    code only passes along stay on the device across the loops
    (residency.py)."""
    _refuse_host_reads_of_device_arrays(state, reason)
    parfors = _top_level_parfors(state.func_ir)
    interfaces = [_interface(state.func_ir, parfor) for parfor in parfors]
    resident = _resident_candidates(state, parfors, interfaces)
    try:
        return _compile_loops(state, typed_ir, reason, parfors, interfaces, resident)
    except _LoopOnCPU:
        # a loop Numba runs on the CPU needs the host's arrays current
        return _compile_loops(state, typed_ir, reason, parfors, interfaces, set())


class _LoopOnCPU(Exception):
    pass


def _compile_loops(state, typed_ir, reason: str, parfors: list, interfaces: list,
                   resident: set) -> CompiledPath:
    allow_cpu = unsupported_loops_setting(state.get("numba_mlir_gpu_unsupported_loops")) == "cpu"
    loops, written = [], {name: False for name in resident}
    definitions = host_definitions(state.func_ir)
    for parfor, (inputs, outputs) in zip(parfors, interfaces):
        loop = LoopPath(parfor.loc.line if parfor.loc else None, inputs, outputs, None)
        binding = bind_inputs(inputs, state.typemap, definitions, state.typingctx,
                              parfor.init_block.scope, parfor.loc)
        loop.parameters = binding.parameters
        loop_state = _loop_state(state, parfor, binding, outputs, resident)
        try:
            loop.compiled = compile_state(loop_state, typed_ir)
        except UnsupportedConstructError as exc:
            if not allow_cpu or _reads_device_arrays(state.typemap, inputs):
                raise
            if resident & set(inputs):
                raise _LoopOnCPU() from None
            loop.reason = exc.construct
            if state.get("locals"):
                parfor.lowerer = functools.partial(_numba_cpu_loop, dict(state.locals))
            warnings.warn(FallbackWarning(
                f"numba-mlir-gpu: the parallel loop at line {loop.line} runs with Numba's CPU "
                f"lowering (unsupported_loops='cpu'): {exc.construct}", loc=parfor.loc))
        else:
            parfor.lowerer = functools.partial(_call_loop, loop)
            loop.written = written_arguments(loop_state.func_ir)
            for index in loop.written:
                name = binding.parameters[index].input
                if name in written:
                    written[name] = True
        loops.append(loop)
    return CompiledPath("fallback", reason, loops, written)


def _resident_candidates(state, parfors: list, interfaces: list) -> set[str]:
    """Host arrays to keep on the GPU: only where the loops run there, and
    none where a loop hands an array back to the host code."""
    choice = choose_target(state.get("numba_mlir_gpu_target"))
    if not (choice.builds_gpu_code and choice.runs):
        return set()
    if any(isinstance(state.typemap[n], types.Array) for _, outputs in interfaces
           for n in outputs):
        return set()
    assigned = set().union(*(_assigned(p) for p in parfors)) if parfors else set()
    return resident_candidates(state.func_ir, state.typemap,
                               [set(inputs) for inputs, _ in interfaces], assigned, parfors)


class HostLower(EntryCalls, ParforLower):
    """Numba's lowering of the host code; parfors call their MLIR functions
    through the `lowerer` compile_loops gave them. Resident arrays get their
    device copies where the host code defines them and give them up before
    the host code drops them, returns or raises."""

    def __init__(self, *args, resident: Optional[dict] = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.mirrors = DeviceMirrors(resident or {})

    def lower_inst(self, inst):
        if isinstance(inst, (ir.Return, ir.StaticRaise, ir.DynamicRaise, ir.Raise)):
            self.mirrors.release_all(self)
        elif isinstance(inst, ir.Del) and inst.value in self.mirrors:
            self.mirrors.release(self, inst.value)
        super().lower_inst(inst)
        if isinstance(inst, ir.Assign) and inst.target.name in self.mirrors:
            self.mirrors.make(self, inst.target.name)


# -- outlining ------------------------------------------------------------------

def _top_level_parfors(func_ir) -> list[Parfor]:
    return [stmt for block in func_ir.blocks.values() for stmt in block.body
            if isinstance(stmt, Parfor)]


def _interface(func_ir, parfor: Parfor) -> tuple[list[str], list[str]]:
    """The loop's inputs (read before any write inside it, and assigned by
    other statements of the function) and its outputs (assigned inside it
    and read by other statements). Parfor use-defs count a variable of an
    inner loop's header as read before written: the first condition drops it."""
    block = ir.Block(parfor.init_block.scope, parfor.loc)
    block.body = [parfor]
    reads = compute_use_defs({0: block}).usemap[0]
    writes = _assigned(parfor)        # reductions included, which use-defs leave out
    used_elsewhere, assigned_elsewhere = set(), set()
    for other in func_ir.blocks.values():
        for stmt in other.body:
            if stmt is parfor:
                continue
            used_elsewhere.update(v.name for v in stmt.list_vars())
            if isinstance(stmt, ir.Assign):
                assigned_elsewhere.add(stmt.target.name)
            elif isinstance(stmt, Parfor):
                assigned_elsewhere |= _assigned(stmt)
    return sorted(reads & assigned_elsewhere), sorted(writes & used_elsewhere)


def _assigned(parfor: Parfor) -> set[str]:
    names = set()
    for block in [parfor.init_block, *parfor.loop_body.values()]:
        for stmt in block.body:
            if isinstance(stmt, ir.Assign):
                names.add(stmt.target.name)
            elif isinstance(stmt, Parfor):
                names |= _assigned(stmt)
    return names


def _loop_state(state, parfor: Parfor, binding: Binding, outputs: list[str],
                resident: set) -> StateDict:
    """A compiler state whose function is the loop alone, its inputs bound
    by `binding`; `resident` arrays come to it as device arrays."""
    scope, loc = parfor.init_block.scope, parfor.loc
    block = ir.Block(scope, loc)
    block.body = list(binding.prologue)
    block.append(parfor)
    typemap = {**state.typemap, **binding.typemap}
    params = binding.parameters
    for name in resident & {p.input for p in params if p.whole}:
        typemap[name] = device_type(typemap[name])
    results = ir.Var(scope, "$loop_results", loc)
    block.append(ir.Assign(ir.Expr.build_tuple([ir.Var(scope, n, loc) for n in outputs], loc),
                           results, loc))
    returned = ir.Var(scope, "$loop_returned", loc)
    block.append(ir.Assign(ir.Expr.cast(results, loc), returned, loc))
    block.append(ir.Return(returned, loc))
    restype = types.Tuple([state.typemap[n] for n in outputs])
    typemap[results.name] = typemap[returned.name] = restype
    loop = StateDict(state)
    loop.func_ir = state.func_ir.derive({0: block}, arg_count=len(params),
                                        arg_names=tuple(p.name for p in params),
                                        force_non_generator=True)
    # derive keeps the host's definitions: an input is an argument here
    loop.func_ir._definitions = build_definitions(loop.func_ir.blocks)
    loop.typemap = typemap
    # the host's call types stay the host's: the prologue's calls are the loop's own
    loop.calltypes = copy.copy(state.calltypes)
    loop.calltypes.update(binding.calltypes)
    loop.args = tuple(typemap[p.name] for p in params)
    loop.return_type = restype
    return loop


def _call_loop(loop: LoopPath, lowerer: HostLower, parfor: Parfor) -> None:
    """The parfor's lowering in the host code: a call of its MLIR function."""
    builder = lowerer.builder
    if loop.compiled.jitted is None:
        # raised in a branch: the host code after the loop is still lowered
        with cgutils.if_likely(builder, cgutils.true_bit):
            lowerer.call_conv.return_user_exc(builder, CompileOnlyError, (
                "compiled with target 'compile-only': its GPU code was built but nothing "
                "runs",))
        return
    argtypes = [_parameter_type(lowerer, p) for p in loop.parameters]
    args = [_parameter_value(lowerer, p) for p in loop.parameters]
    restype = types.Tuple([lowerer.typeof(n) for n in loop.outputs])
    results = lowerer.call_entry(loop.compiled, argtypes, args, restype)
    for index in loop.written:
        mark_written_list(lowerer, loop.parameters[index])
    for i, name in enumerate(loop.outputs):
        lowerer.storevar(builder.extract_value(results, i), name)


def _numba_cpu_loop(declared: dict, lowerer: HostLower, parfor: Parfor) -> None:
    """Numba's CPU lowering of a parfor, its body typed again with the function's
    `locals` declarations: Numba's own lowering types the outlined body without them
    (`_create_gufunc_for_parfor_body(..., locals={})`), so a variable declared int32
    and assigned an int64 becomes int64 there and no longer matches the types the
    function was inferred with (a heapq push of a list of (float32, int32) tuples
    fails to type). Stock Numba with parallel=True fails alike."""
    create = parfor_lowering._create_gufunc_for_parfor_body

    def with_locals(lowerer, parfor, typemap, typingctx, targetctx, flags, locals, *rest):
        return create(lowerer, parfor, typemap, typingctx, targetctx, flags,
                      {**declared, **locals}, *rest)

    # module global looked up at the call; compilations hold Numba's compiler lock
    parfor_lowering._create_gufunc_for_parfor_body = with_locals
    try:
        parfor_lowering._lower_parfor_parallel_std(lowerer, parfor)
    finally:
        parfor_lowering._create_gufunc_for_parfor_body = create


def _parameter_type(lowerer: HostLower, parameter: Parameter) -> types.Type:
    if parameter.whole and parameter.input in lowerer.mirrors:
        return lowerer.mirrors.type_of(lowerer, parameter.input)
    return parameter.type


def _parameter_value(lowerer: HostLower, parameter: Parameter):
    if parameter.whole and parameter.input in lowerer.mirrors:
        return lowerer.mirrors.load(lowerer, parameter.input)
    return parameter_value(lowerer, parameter, lowerer.loadvar(parameter.input))


# -- what host code may do with GPU arrays ----------------------------------------

def _reads_device_arrays(typemap, names) -> bool:
    return any(isinstance(typemap.get(n), DeviceArrayType) for n in names)


def _refuse_host_reads_of_device_arrays(state, reason: str) -> None:
    """Numba's host code runs on the CPU: it may pass GPU arrays around and
    read their shapes, never their elements."""
    typemap = state.typemap
    for block in state.func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, Parfor) or not _reads_device_arrays(
                    typemap, [v.name for v in stmt.list_vars()]):
                continue
            if isinstance(stmt, ir.Assign) and _only_moves(stmt.value, typemap):
                continue
            if isinstance(stmt, (ir.Return, ir.Del)):
                continue
            raise UnsupportedConstructError(
                f"{stmt} on a GPU array in host code that our lowering sends to Numba's "
                f"(because it does not support {reason})", stmt.loc)


def _only_moves(value, typemap) -> bool:
    if isinstance(value, (ir.Arg, ir.Var, ir.Const, ir.Global, ir.FreeVar)):
        return True
    if not isinstance(value, ir.Expr):
        return False
    if value.op == "getattr":
        return value.attr in METADATA
    return value.op in ("build_tuple", "cast", "exhaust_iter", "static_getitem") and not (
        value.op == "static_getitem" and isinstance(typemap.get(value.value.name),
                                                    DeviceArrayType))
