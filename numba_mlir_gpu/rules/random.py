"""np.random: seed, uniform and normal floats, exponential, randint, poisson,
one value or an array of them (`size=`, or the dimensions of rand/randn).

Every draw is a Philox4x32-10 block (lowering/philox.py) of the stream
position and draw number that lowering/random_streams.py gives the code
being lowered: host code, an iteration of a parallel loop, an element of an
array being filled. The numbers differ from NumPy's and from Numba's CPU
ones (other generators), but a seeded program repeats exactly, on either
target and whatever the launch shape. Other np.random functions (and
Python's `random` module) are refused by name.
"""
from __future__ import annotations

import math

import numpy as np
from numba.core import types

from .._mlir import arith, ir, math as mmath, scf
from ..lowering.arrays import allocate, store_element
from ..lowering.build import cmpf, cmpi, const, const_i64, select, to_index
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import parallel_for, product
from ..lowering.philox import join_i64
from ..lowering.random_streams import (PYTHON_RANDOM_CALLABLES, RANDOM_CALLABLES, Draws,
                                       iteration, loop_stream, seed)
from ..lowering.registry import call_rules
from ..lowering.values import PyValue, TupleValue

F64 = types.float64


def _f64(value: float) -> ir.Value:
    return const(F64, value)


# -- bits to numbers ---------------------------------------------------------

def _unit(low: ir.Value, high: ir.Value) -> ir.Value:
    """A float64 in [0, 1): the top 53 bits of the 64-bit word (high, low)
    times 2**-53, so every value is a multiple of 2**-53."""
    bits = arith.ShRUIOp(join_i64(low, high), const_i64(11)).result
    return arith.MulFOp(arith.UIToFPOp(ir.F64Type.get(), bits).result, _f64(2.0 ** -53)).result


def _log_of_complement(u: ir.Value) -> ir.Value:
    """log(1 - u): finite for u in [0, 1) (1 - u is exact for multiples of 2**-53)."""
    return mmath.LogOp(arith.SubFOp(_f64(1.0), u).result).result


def _standard_normal(words: list[ir.Value]) -> ir.Value:
    """Box-Muller on the block's two uniforms (one normal per block: the
    draws stay one block each, whatever the loop)."""
    u1, u2 = _unit(words[0], words[1]), _unit(words[2], words[3])
    radius = mmath.SqrtOp(arith.MulFOp(_f64(-2.0), _log_of_complement(u1)).result).result
    angle = arith.MulFOp(_f64(2.0 * math.pi), u2).result
    return arith.MulFOp(radius, mmath.CosOp(angle).result).result


def _until(draws: Draws, start, result_types: list[ir.Type], trial) -> tuple[list, object]:
    """Blocks from draw number `start` (None in host code) until
    `trial(words) -> (accepted: i1, values)` accepts one: the accepted values
    and the draw number after it. The draw number is carried by the loop
    (scf.while), never stored inside it."""
    carried = [] if start is None else [start]
    initial = carried + [arith.ConstantOp(t, ir.IntegerAttr.get(t, 0) if isinstance(
        t, ir.IntegerType) else ir.FloatAttr.get(t, 0.0)).result for t in result_types]
    loop_types = [v.type for v in initial]
    loop = scf.WhileOp(loop_types, initial)
    before = loop.before.blocks.append(*loop_types)
    after = loop.after.blocks.append(*loop_types)
    with ir.InsertionPoint(before):
        words, next_draw = draws.block(None if start is None else before.arguments[0])
        accepted, values = trial(words)
        again = arith.XOrIOp(accepted, const(types.boolean, 1)).result
        scf.ConditionOp(again, ([] if start is None else [next_draw]) + values)
    with ir.InsertionPoint(after):
        scf.YieldOp(list(after.arguments))
    results = list(loop.results)
    if start is None:
        return results, None
    return results[1:], results[0]


def _randint(draws: Draws, low: ir.Value, high: ir.Value) -> ir.Value:
    """low + x mod n (n = high - low > 0) for a 64-bit x drawn again while
    below 2**64 mod n (so that every residue is equally likely; a redraw
    happens with probability below n / 2**64)."""
    n = arith.SubIOp(high, low).result
    threshold = arith.RemUIOp(arith.SubIOp(const_i64(0), n).result, n).result

    def trial(words):
        x = join_i64(words[0], words[1])
        return cmpi("uge", x, threshold), [arith.RemUIOp(x, n).result]
    start = draws.start()
    (offset,), end = _until(draws, start, [ir.IntegerType.get_signless(64)], trial)
    draws.finish(end)
    return arith.AddIOp(low, offset).result


# -- poisson -----------------------------------------------------------------

_LOGGAM = [8.333333333333333e-02, -2.777777777777778e-03, 7.936507936507937e-04,
           -5.952380952380952e-04, 8.417508417508418e-04, -1.917526917526918e-03,
           6.410256410256410e-03, -2.955065359477124e-02, 1.796443723688307e-01,
           -1.39243221690590e+00]


def _loggam(x: ir.Value) -> ir.Value:
    """log(Gamma(x)) for x >= 1, NumPy's `random_loggam`: Stirling's series
    at x0 = x + n >= 7, then log(x0 - 1), ..., log(x) subtracted."""
    shift = arith.MaxSIOp(const_i64(0), arith.FPToSIOp(
        ir.IntegerType.get_signless(64), arith.SubFOp(_f64(7.0), x).result).result).result
    x0 = arith.AddFOp(x, arith.SIToFPOp(ir.F64Type.get(), shift).result).result
    x2 = arith.DivFOp(_f64(1.0), arith.MulFOp(x0, x0).result).result
    series = _f64(_LOGGAM[9])
    for a in reversed(_LOGGAM[:9]):
        series = arith.AddFOp(arith.MulFOp(series, x2).result, _f64(a)).result
    gl = arith.SubFOp(arith.AddFOp(
        arith.AddFOp(arith.DivFOp(series, x0).result, _f64(0.5 * math.log(2 * math.pi))).result,
        arith.MulFOp(arith.SubFOp(x0, _f64(0.5)).result, mmath.LogOp(x0).result).result).result,
        x0).result
    loop = scf.ForOp(to_index(const_i64(0)), to_index(shift), to_index(const_i64(1)), [gl])
    with ir.InsertionPoint(loop.body):
        k = arith.SIToFPOp(ir.F64Type.get(), arith.IndexCastOp(
            ir.IntegerType.get_signless(64), loop.induction_variable).result).result
        # subtract log(x0 - 1 - k) for k = 0 .. shift - 1: log(x + shift - 1) .. log(x)
        term = mmath.LogOp(arith.SubFOp(arith.SubFOp(x0, _f64(1.0)).result, k).result).result
        scf.YieldOp([arith.SubFOp(loop.inner_iter_args[0], term).result])
    return loop.results[0]


def _poisson_ptrs(draws: Draws, start, lam: ir.Value) -> tuple[ir.Value, object]:
    """Hormann's transformed rejection with squeeze (PTRS), as NumPy's
    `random_poisson_ptrs`, for lam >= 10: two uniforms (one block) per trial."""
    i64 = ir.IntegerType.get_signless(64)
    slam = mmath.SqrtOp(lam).result
    loglam = mmath.LogOp(lam).result
    b = arith.AddFOp(_f64(0.931), arith.MulFOp(_f64(2.53), slam).result).result
    a = arith.AddFOp(_f64(-0.059), arith.MulFOp(_f64(0.02483), b).result).result
    invalpha = arith.AddFOp(_f64(1.1239), arith.DivFOp(
        _f64(1.1328), arith.SubFOp(b, _f64(3.4)).result).result).result
    vr = arith.SubFOp(_f64(0.9277), arith.DivFOp(
        _f64(3.6224), arith.SubFOp(b, _f64(2.0)).result).result).result

    def trial(words):
        u = arith.SubFOp(_unit(words[0], words[1]), _f64(0.5)).result
        v = _unit(words[2], words[3])
        us = arith.SubFOp(_f64(0.5), mmath.AbsFOp(u).result).result
        k = mmath.FloorOp(arith.AddFOp(arith.AddFOp(arith.MulFOp(arith.AddFOp(
            arith.DivFOp(arith.MulFOp(_f64(2.0), a).result, us).result, b).result, u).result,
            lam).result, _f64(0.43)).result).result
        quick = arith.AndIOp(cmpf("OGE", us, _f64(0.07)), cmpf("OLE", v, vr)).result
        refused = arith.OrIOp(cmpf("OLT", k, _f64(0.0)), arith.AndIOp(
            cmpf("OLT", us, _f64(0.013)), cmpf("OGT", v, us)).result).result
        # log(V) + log(invalpha) - log(a / us^2 + b) <= -lam + k log(lam) - loggam(k + 1)
        safe_k = arith.MaximumFOp(k, _f64(0.0)).result
        lhs = arith.SubFOp(arith.AddFOp(mmath.LogOp(v).result, mmath.LogOp(invalpha).result
                                        ).result, mmath.LogOp(arith.AddFOp(arith.DivFOp(
                                            a, arith.MulFOp(us, us).result).result, b
                                        ).result).result).result
        rhs = arith.SubFOp(arith.AddFOp(arith.NegFOp(lam).result, arith.MulFOp(
            safe_k, loglam).result).result, _loggam(arith.AddFOp(safe_k, _f64(1.0)).result)
        ).result
        slow = arith.AndIOp(arith.XOrIOp(refused, const(types.boolean, 1)).result,
                            cmpf("OLE", lhs, rhs)).result
        return arith.OrIOp(quick, slow).result, [arith.FPToSIOp(i64, safe_k).result]
    (k,), end = _until(draws, start, [i64], trial)
    return k, end


def _poisson_inversion(draws: Draws, start, lam: ir.Value) -> tuple[ir.Value, object]:
    """Inversion for lam < 10: the smallest k whose cumulative probability
    passes one uniform (sequential search; at most 1000 steps, where the
    rounded sum could stop short of the uniform)."""
    i64 = ir.IntegerType.get_signless(64)
    words, end = draws.block(start)
    u = _unit(words[0], words[1])
    p0 = mmath.ExpOp(arith.NegFOp(lam).result).result
    loop = scf.WhileOp([i64, p0.type, p0.type], [const_i64(0), p0, p0])
    before = loop.before.blocks.append(i64, p0.type, p0.type)
    after = loop.after.blocks.append(i64, p0.type, p0.type)
    with ir.InsertionPoint(before):
        k, _, cumulative = before.arguments
        more = arith.AndIOp(cmpf("OGT", u, cumulative),
                            cmpi("slt", k, const_i64(1000))).result
        scf.ConditionOp(more, list(before.arguments))
    with ir.InsertionPoint(after):
        k, p, cumulative = after.arguments
        k1 = arith.AddIOp(k, const_i64(1)).result
        p1 = arith.MulFOp(p, arith.DivFOp(lam, arith.SIToFPOp(
            ir.F64Type.get(), k1).result).result).result
        scf.YieldOp([k1, p1, arith.AddFOp(cumulative, p1).result])
    return loop.results[0], end


def _poisson(lw, draws: Draws, lam: ir.Value) -> ir.Value:
    code = lw.errors.code(ValueError, ("poisson(): lambda < 0",))
    lw.errors.raise_if(lw, cmpf("OLT", lam, _f64(0.0)), code)
    large = cmpf("OGE", lam, _f64(10.0))
    # the draw number after either branch is a result of the scf.if
    start = draws.start()
    i64 = ir.IntegerType.get_signless(64)
    branch = scf.IfOp(large, [i64] * (1 if start is None else 2), has_else=True)
    for block, method in ((branch.then_block, _poisson_ptrs),
                          (branch.else_block, _poisson_inversion)):
        with ir.InsertionPoint(block):
            k, end = method(draws, start, lam)
            scf.YieldOp([k] + ([] if start is None else [end]))
    if start is not None:
        draws.finish(branch.results[1])
    return branch.results[0]


# -- arguments ---------------------------------------------------------------

def _arguments(lw, args: list, sig, expr, names: list[str]) -> dict:
    """name -> (value, Numba type) of the call's arguments, positional and
    keyword; omitted ones and None are left out."""
    bound = {}
    for name, value, ty in zip(names, args, sig.args):
        bound[name] = (value, ty)
    for name, var in expr.kws:
        if name not in names:
            raise UnsupportedConstructError(f"np.random's keyword argument {name}=", expr.loc)
        bound[name] = (lw.read(var), lw.typeof(var.name))
    return {name: (value, ty) for name, (value, ty) in bound.items()
            if not isinstance(ty, (types.Omitted, types.NoneType))
            and not (isinstance(value, PyValue) and value.obj is None)}


def _float_parameter(bound: dict, name: str, default: float) -> ir.Value:
    if name not in bound:
        return _f64(default)
    value, ty = bound[name]
    if isinstance(value, PyValue):
        return _f64(value.obj)
    return cast(value, types.unliteral(ty), F64)


def _extents(size, ty, loc) -> list[ir.Value]:
    if isinstance(size, TupleValue):
        if not size.items:
            raise UnsupportedConstructError("np.random with size=() (a 0-d array)", loc)
        return [to_index(cast(v, t, types.intp)) for v, t in zip(size.items, ty.types)]
    if isinstance(size, ir.Value) and isinstance(ty, types.Integer):
        return [to_index(cast(size, ty, types.intp))]
    raise UnsupportedConstructError(f"np.random with size of type {ty}", loc)


def _draw(lw, result_ty: types.Type, extents, element, loc):
    """One value (`extents` None), or a new array of `extents` filled in one
    parallel loop whose element k draws as iteration k (row-major)."""
    if extents is None:
        return element(Draws(lw, loc))
    if not isinstance(result_ty, types.Array):
        raise UnsupportedConstructError(f"np.random returning {result_ty}", loc)
    array = allocate(lw, result_ty, extents)
    stream = loop_stream(lw, product(extents), loc)

    def body(indices):
        with iteration(lw, stream, indices, extents, in_slot=False):
            store_element(element(Draws(lw, loc)), array, indices)
    parallel_for(lw, extents, body)
    return array


def _sized(bound: dict, loc) -> list | None:
    """The extents of `size=`, or None for one value."""
    if "size" not in bound:
        return None
    return _extents(*bound["size"], loc)


# -- the functions -----------------------------------------------------------

@call_rules.register(np.random.seed)
def random_seed(lw, args, sig, expr):
    (value,) = args
    ty = types.unliteral(sig.args[0])
    if not isinstance(ty, types.Integer):
        raise UnsupportedConstructError(f"np.random.seed({ty})", expr.loc)
    seed(lw, cast(value, ty, types.uint64), expr.loc)
    return PyValue(None)


def _uniform_unit(draws: Draws) -> ir.Value:
    words = draws.next_block()
    return _unit(words[0], words[1])


@call_rules.register(np.random.random, np.random.random_sample, np.random.ranf,
                     np.random.sample)
def random_random(lw, args, sig, expr):
    bound = _arguments(lw, args, sig, expr, ["size"])
    return _draw(lw, sig.return_type, _sized(bound, expr.loc), _uniform_unit, expr.loc)


def _dimensions(lw, args, sig, expr):
    """rand(d0, d1, ...) / randn(...): the extents, or None for no arguments."""
    if expr.kws:
        raise UnsupportedConstructError("keyword arguments of np.random.rand/randn", expr.loc)
    if not args:
        return None
    return [to_index(cast(v, types.unliteral(t), types.intp)) for v, t in zip(args, sig.args)]


@call_rules.register(np.random.rand)
def random_rand(lw, args, sig, expr):
    return _draw(lw, sig.return_type, _dimensions(lw, args, sig, expr), _uniform_unit,
                 expr.loc)


def _normal_element(loc_value, scale):
    def element(draws):
        z = _standard_normal(draws.next_block())
        if loc_value is None:
            return z
        return arith.AddFOp(loc_value, arith.MulFOp(scale, z).result).result
    return element


@call_rules.register(np.random.randn)
def random_randn(lw, args, sig, expr):
    return _draw(lw, sig.return_type, _dimensions(lw, args, sig, expr),
                 _normal_element(None, None), expr.loc)


@call_rules.register(np.random.standard_normal)
def random_standard_normal(lw, args, sig, expr):
    bound = _arguments(lw, args, sig, expr, ["size"])
    return _draw(lw, sig.return_type, _sized(bound, expr.loc),
                 _normal_element(None, None), expr.loc)


@call_rules.register(np.random.normal)
def random_normal(lw, args, sig, expr):
    bound = _arguments(lw, args, sig, expr, ["loc", "scale", "size"])
    loc_value = _float_parameter(bound, "loc", 0.0)
    scale = _float_parameter(bound, "scale", 1.0)
    return _draw(lw, sig.return_type, _sized(bound, expr.loc),
                 _normal_element(loc_value, scale), expr.loc)


@call_rules.register(np.random.uniform)
def random_uniform(lw, args, sig, expr):
    bound = _arguments(lw, args, sig, expr, ["low", "high", "size"])
    low = _float_parameter(bound, "low", 0.0)
    high = _float_parameter(bound, "high", 1.0)
    width = arith.SubFOp(high, low).result

    def element(draws):
        return arith.AddFOp(low, arith.MulFOp(width, _uniform_unit(draws)).result).result
    return _draw(lw, sig.return_type, _sized(bound, expr.loc), element, expr.loc)


def _exponential(lw, args, sig, expr, names):
    bound = _arguments(lw, args, sig, expr, names)
    scale = _float_parameter(bound, "scale", 1.0)

    def element(draws):
        minus_log = arith.NegFOp(_log_of_complement(_uniform_unit(draws))).result
        return arith.MulFOp(minus_log, scale).result
    return _draw(lw, sig.return_type, _sized(bound, expr.loc), element, expr.loc)


@call_rules.register(np.random.exponential)
def random_exponential(lw, args, sig, expr):
    return _exponential(lw, args, sig, expr, ["scale", "size"])


@call_rules.register(np.random.standard_exponential)
def random_standard_exponential(lw, args, sig, expr):
    return _exponential(lw, args, sig, expr, ["size"])


@call_rules.register(np.random.randint)
def random_randint(lw, args, sig, expr):
    bound = _arguments(lw, args, sig, expr, ["low", "high", "size"])
    if "high" not in bound:             # randint(high): [0, high)
        bound["low"], bound["high"] = (const_i64(0), types.int64), bound["low"]
    low, high = (cast(bound[n][0], types.unliteral(bound[n][1]), types.int64)
                 for n in ("low", "high"))
    code = lw.errors.code(ValueError, ("empty range for randrange()",))
    lw.errors.raise_if(lw, cmpi("sle", high, low), code)
    # while the error is pending, draw from a range of one
    high = select(cmpi("sle", high, low), arith.AddIOp(low, const_i64(1)).result, high)
    result_ty = sig.return_type
    element_ty = result_ty.dtype if isinstance(result_ty, types.Array) else result_ty

    def element(draws):
        return cast(_randint(draws, low, high), types.int64, element_ty)
    return _draw(lw, result_ty, _sized(bound, expr.loc), element, expr.loc)


@call_rules.register(np.random.poisson)
def random_poisson(lw, args, sig, expr):
    bound = _arguments(lw, args, sig, expr, ["lam", "size"])
    lam = _float_parameter(bound, "lam", 1.0)
    result_ty = sig.return_type
    element_ty = result_ty.dtype if isinstance(result_ty, types.Array) else result_ty

    def element(draws):
        return cast(_poisson(lw, draws, lam), types.int64, element_ty)
    return _draw(lw, result_ty, _sized(bound, expr.loc), element, expr.loc)


# -- everything else: refused by name ------------------------------------------

def _refuse(name: str):
    def rule(lw, args, sig, expr):
        raise UnsupportedConstructError(
            f"{name} (random numbers: np.random.seed, random, random_sample, ranf, sample, "
            "rand, randn, standard_normal, normal, uniform, exponential, "
            "standard_exponential, randint and poisson are supported)", expr.loc)
    return rule


_SUPPORTED = {np.random.seed, np.random.random, np.random.random_sample, np.random.ranf,
              np.random.sample, np.random.rand, np.random.randn, np.random.standard_normal,
              np.random.normal, np.random.uniform, np.random.exponential,
              np.random.standard_exponential, np.random.randint, np.random.poisson}

for _function in RANDOM_CALLABLES - _SUPPORTED:
    call_rules.register(_function)(_refuse(f"np.random.{_function.__name__}"))

for _function in PYTHON_RANDOM_CALLABLES:
    call_rules.register(_function)(_refuse(f"random.{_function.__name__} (Python's random module)"))
