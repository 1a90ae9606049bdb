"""Calls of jitted functions and of Numba's pure-Python @overloads.

The callee is lowered through our own pipeline into the same module (see
module.py) and called with `func.call`; its status result is checked like
any raise.
"""
from __future__ import annotations

import inspect
from typing import Optional

from numba.core import types
from numba.core.cpu import FastMathOptions

from .._mlir import func, ir, memref
from .arrays import fortran_array
from .build import cmpi, const
from .casts import cast
from .errors import NeedsDeviceHeap, NeedsPlainKernel, UnsupportedConstructError
from .exceptions import STATUS, status_type
from .types import (is_fortran, is_optional_array, is_optional_scalar, is_scalar, is_static,
                    static_value)
from .values import ArrayValue, BoundMethod, OptionalValue, PyValue, TupleValue


def jitted_implementation(lw, expr, sig) -> Optional[tuple]:
    """(python function, argument types) implementing the call, if it is a
    jitted function or an @overload written in Python."""
    fnty = lw.typeof(expr.func.name)
    if isinstance(fnty, types.Dispatcher):
        dispatcher = fnty.dispatcher
        # lowered into this module, it keeps its own fastmath option
        lw.mlower.dispatcher_fastmath[dispatcher.py_func] = _fastmath_option(dispatcher)
        return dispatcher.py_func, tuple(sig.args)
    if isinstance(fnty, types.BoundFunction):
        candidates, args = [fnty.template], (fnty.this,) + tuple(sig.args)
    elif isinstance(fnty, types.Function):
        candidates, args = fnty.templates, tuple(sig.args)
    else:
        return None
    # The call's signature lists omitted arguments (`side` of
    # np.searchsorted(a, v)) as Omitted types, but Numba typed the call
    # without them: an @overload's typing function may not accept them, or
    # take them for given ones (np.average's `axis is not None` picked its
    # "axis not supported" implementation), so the call as typed comes first.
    # Keyword arguments are given to the typing function as keywords, as
    # Numba typed them (the signature has them folded in parameter order).
    given = list(args)
    while given and isinstance(given[-1], types.Omitted):
        given.pop()
    attempts = [(tuple(given), {}, tuple(args[len(given):])), (tuple(args), {}, ())]
    if len(given) == len(args):
        attempts.pop()
    if expr.kws:
        positional = len(expr.args) + len(args) - len(sig.args)      # + the receiver
        keywords = {name: lw.typeof(var.name) for name, var in expr.kws}
        attempts.insert(0, (tuple(args[:positional]), keywords, tuple(args[positional:])))
    for template_cls in candidates:
        if not hasattr(template_cls, "_get_impl"):
            continue
        for tried, keywords, rest in attempts:
            try:
                dispatcher_type, impl_args = template_cls(lw.mlower.typingctx)._get_impl(
                    tried, keywords)
            except Exception:    # noqa: BLE001  (not this template's signature)
                continue
            if dispatcher_type is None:
                continue
            dispatcher = getattr(dispatcher_type, "dispatcher", dispatcher_type)
            impl_args = tuple(impl_args) + rest
            if _accepts(dispatcher.py_func, len(impl_args)):
                return dispatcher.py_func, impl_args
    return None


def _fastmath_option(dispatcher) -> FastMathOptions:
    """A dispatcher's fastmath option as Numba's Flags hold it."""
    return FastMathOptions(dispatcher.targetoptions.get("fastmath", False))


def _accepts(py_func, nargs: int) -> bool:
    """Whether `py_func` takes exactly `nargs` plain arguments (Numba passes
    *args as one tuple, which the flat call here does not build)."""
    signature = inspect.signature(py_func)
    if any(p.kind == p.VAR_POSITIONAL for p in signature.parameters.values()):
        return False
    try:
        signature.bind(*range(nargs))
    except TypeError:
        return False
    return True


def call_jitted(lw, py_func, argtypes: tuple, args: list, expr, restype):
    """Call `py_func` lowered for `argtypes`; the result as a value of
    `restype`, the type Numba gave the call."""
    if expr.kws:
        kws = {name: lw.read(var) for name, var in expr.kws}
        args = fold_arguments(py_func, args, kws, argtypes)
    fnty = lw.typeof(expr.func.name)
    if isinstance(fnty, types.BoundFunction):
        args = [_receiver(lw, expr)] + list(args)
    try:
        callee = lw.mlower.callee(py_func, argtypes, lw.parallel_depth > 0, expr.loc)
    except UnsupportedConstructError as exc:
        # Report at the user's call, naming the implementation it went into.
        construct = exc.construct
        if lw.entry and "inside" not in construct:
            construct += f" (inside {py_func.__module__}.{py_func.__qualname__}, called here)"
        raise UnsupportedConstructError(construct, expr.loc if lw.entry else exc.loc) from None
    _check_cooperative_call(lw, py_func, argtypes, callee, expr)
    flat: list = []
    for value, ty in zip(args, argtypes):
        _flatten(value, ty, flat, expr)
    if callee.allocates:
        lw.allocates_on_device = True
    if callee.status_cell:
        flat.append(lw.heap_status())
    flat = [_conform(v, t) for v, t in zip(flat, callee.param_types)]
    call = func.CallOp([status_type()] + callee.result_types, callee.name, flat)
    status = call.results[0]
    lw.errors.raise_if(lw, cmpi("ne", status, const(STATUS, 0)), status)
    results = list(call.results[1:])
    # The callee returns what its body computes (typed_ir infers the return
    # type); a dispatcher compiled for an explicit signature (`i4(i8)` of a
    # body computing int64) returns the declared type, which the call is
    # typed with: convert as that dispatcher's own return would.
    value = _rebuild(callee.restype, results, expr.loc)
    value = _arguments_returned(value, callee.restype, iter(callee.returned_arguments),
                                list(args), callee.argtypes)
    return lw.convert(value, callee.restype, restype)


def _arguments_returned(value, ty, returned, args: list, argtypes: tuple):
    """An array the callee returns unchanged from its parameters is the
    caller's argument itself (`c = f(a)` with `def f(a): return a`: `c is a`,
    as in Numba), so that returning it returns the caller's own array."""
    if isinstance(value, TupleValue):
        return TupleValue([_arguments_returned(v, t, returned, args, argtypes)
                           for v, t in zip(value.items, ty.types)], value.type)
    if isinstance(value, OptionalValue) and isinstance(value.value, ArrayValue):
        next(returned, None)        # always a new array (function.py _flatten_result)
        return value
    if not isinstance(value, ArrayValue):
        return value
    k = next(returned, None)
    if k is None or k >= len(args) or not isinstance(args[k], ArrayValue) or \
            is_fortran(ty) or types.unliteral(argtypes[k]) != ty or args[k].type != ty:
        return value
    return args[k]


def _check_cooperative_call(lw, py_func, argtypes: tuple, callee, expr) -> None:
    """Every thread of a block runs a call outside the element loops of a GPU
    array reduction (targets/gpu/chunks.py): a callee that writes an array it is
    given would do so once per thread."""
    if lw.cooperation is None:
        return
    if callee.allocates:
        # each thread would make its own arrays, where the block shares one
        raise NeedsDeviceHeap(
            f"calling {py_func.__qualname__}, which makes arrays, in the body of a GPU prange "
            "loop run in chunks", expr.loc)
    if not lw.cooperation.free:
        return
    if any(i < len(argtypes) and _holds_arrays(argtypes[i]) for i in callee.written):
        raise NeedsPlainKernel(
            f"calling {py_func.__qualname__}, which may write an array it is given, in the body "
            "of a GPU prange loop run in chunks", expr.loc)


def _holds_arrays(ty) -> bool:
    """An array, an optional array (`out=None` given one) or a tuple with one."""
    if isinstance(ty, types.Optional):
        ty = ty.type
    if isinstance(ty, types.BaseTuple):
        return any(_holds_arrays(t) for t in ty.types)
    return isinstance(ty, types.Array)


def _receiver(lw, expr):
    bound = lw.read(expr.func)
    if not isinstance(bound, BoundMethod):
        raise UnsupportedConstructError("this method call", expr.loc)
    return bound.receiver


def _flatten(value, ty, out: list, expr) -> None:
    if is_static(ty):
        return
    if isinstance(ty, types.BaseTuple):
        if not isinstance(value, TupleValue):
            raise UnsupportedConstructError(f"passing {ty} to a jitted function", expr.loc)
        for item, item_ty, want in zip(value.items, value.type.types, ty.types):
            _flatten(cast(item, item_ty, want) if is_scalar(want) else item, want, out, expr)
        return
    if is_optional_scalar(ty):
        if not isinstance(value, OptionalValue):
            raise UnsupportedConstructError(f"passing {ty} to a jitted function", expr.loc)
        out += [value.valid, value.value]
    elif is_optional_array(ty):
        if not isinstance(value, OptionalValue) or not isinstance(value.value, ArrayValue):
            raise UnsupportedConstructError(f"passing {ty} to a jitted function", expr.loc)
        out += [value.valid, value.value.memref]
    elif isinstance(value, ArrayValue):
        out.append(value.memref)
    elif isinstance(value, PyValue) or value is None:
        raise UnsupportedConstructError(f"passing {ty} to a jitted function", expr.loc)
    else:
        out.append(value)


def _conform(value: ir.Value, param_type: ir.Type) -> ir.Value:
    """Arrays of another layout are passed through memref.cast."""
    if value.type != param_type and isinstance(param_type, ir.MemRefType):
        return memref.CastOp(param_type, value).result
    return value


def _rebuild(ty, results: list, loc):
    if isinstance(ty, types.BaseTuple):
        return TupleValue([_rebuild(t, results, loc) for t in ty.types], ty)
    if is_static(ty):
        return PyValue(static_value(ty))
    if is_optional_scalar(ty):
        return OptionalValue(results.pop(0), results.pop(0), ty)
    if is_optional_array(ty):       # (valid, a strided memref the caller owns)
        return OptionalValue(results.pop(0), ArrayValue(results.pop(0), ty.type), ty)
    value = results.pop(0)
    if is_fortran(ty):      # returned as its C-ordered buffer, as by the entry
        return fortran_array(value, ty, loc)
    if isinstance(ty, types.Array):
        return ArrayValue(value, ty)
    return value


def fold_arguments(py_func, args: list, kws: dict, argtypes: tuple) -> list:
    """Positional and keyword arguments in parameter order; parameters left
    to their defaults (typed Omitted) carry None."""
    params = list(inspect.signature(py_func).parameters)
    values = list(args) + [None] * (len(argtypes) - len(args))
    for name, value in kws.items():
        values[params.index(name)] = value
    return values
