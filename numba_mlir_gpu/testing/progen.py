"""Generated prange programs (issue 18, item 2): a seeded grammar of race-free parallel
programs, compiled by our njit and by Numba's serial njit (the oracle), compared.

    python -m numba_mlir_gpu.testing.progen --target cpu --count 1000 --seed 1 --jobs 2

A program is one function `f(x, x2, y, z, A, B, out1, out2, iout, alpha, kk)` over
float64 (`x`, `x2`: n; `A`: n x m), int64 (`y`: n; `B`: n x m) and int32 (`z`: n)
inputs, writing `out1` (float64, n), `out2` (float64, n x m) and `iout` (int64, n) and
returning its scalar reductions. It has one to three loops (`prange(n)`, with start,
stop and step variants, nested `prange`s, inner `range` loops), and serial code between
them (array expressions, NumPy calls, scalars derived from earlier reductions).

Every generated program is race-free and well-defined: a `prange` iteration writes only
elements indexed by its own loop variable, reads an output array written by the same
loop only at that element, updates reductions only through `s += e`, `s -= e`,
`s *= e`, `s = min(s, e)`, `s = max(s, e)`; indices are loop variables, `i - 1`
(wrapping), or clamped (`min(max(e, 0), n - 1)`) or reduced modulo the size; integer
divisors are `abs(e) + 1`; float values stay finite (bounded functions, guarded
divisions, contracting carried updates), so float-to-int conversions are defined.

See docs/testing.md, "Generated programs", for the oracle, tolerances and shrinking."""
from __future__ import annotations

import argparse
import copy
import json
import random
import re
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..frontend.wrapper import CompileOnlyError
from .isolated import run_isolated

# --------------------------------------------------------------------------------------
# Program tree
# --------------------------------------------------------------------------------------
#
# Expressions are `E(typ, fmt, kids)`: `fmt` is a str.format template over the rendered
# kids. typ is "f" (float64), "i" (integer), "b" (bool) -- these may be replaced by a leaf
# or by a kid of the same type when shrinking -- or "x" (a guard or a fixed form: kept,
# only its kids shrink) or "ix:<size>" (an index into an axis of that size: may shrink
# to "0").

LEAF = {"f": "1.5", "i": "3", "b": "True"}


@dataclass
class E:
    typ: str
    fmt: str
    kids: list = field(default_factory=list)

    def render(self) -> str:
        return self.fmt.format(*[k.render() for k in self.kids]) if self.kids else self.fmt


@dataclass
class S:
    """A statement: `fmt` over its expressions; `body` (a block: for/if) and `orelse`.
    `shadow` is an extra line for the oracle only (the sum of |terms| of a float sum
    reduction, for its tolerance), formatted with the same expressions."""
    fmt: str
    exprs: list = field(default_factory=list)
    body: list | None = None
    orelse: list | None = None
    shadow: str | None = None
    removable: bool = True

    def head(self, shadow=False) -> str:
        f = self.shadow if shadow else self.fmt
        return f.format(*[e.render() for e in self.exprs])


@dataclass
class Program:
    stmts: list
    returns: list          # names of returned scalars
    ret_kinds: dict        # name -> "fsum" | "fprod" | "fexact" | "i"

    def source(self, oracle=False) -> str:
        lines = ["def f(x, x2, y, z, A, B, out1, out2, iout, alpha, kk):",
                 "    n = x.shape[0]", "    m = A.shape[1]"]
        if oracle:
            for r in self.returns:
                if self.ret_kinds.get(r) == "fsum":
                    lines.append(f"    {r}__abs = 0.0")

        def emit(stmts, ind):
            if not stmts:
                lines.append(" " * ind + "pass")
            for s in stmts:
                lines.append(" " * ind + s.head())
                if oracle and s.shadow:
                    lines.append(" " * ind + s.head(shadow=True))
                if s.body is not None:
                    emit(s.body, ind + 4)
                if s.orelse is not None:
                    lines.append(" " * ind + "else:")
                    emit(s.orelse, ind + 4)
        emit(self.stmts, 4)
        rets = list(self.returns)
        if oracle:
            rets += [f"{r}__abs" for r in self.returns if self.ret_kinds.get(r) == "fsum"]
        lines.append("    return (" + "".join(r + ", " for r in rets) + ")")
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------------------

FLOAT_ARRAYS_1D = ["x", "x2"]
INT_ARRAYS_1D = ["y", "z"]


class Scope:
    def __init__(self):
        self.fvars: list[str] = []    # float scalars readable here
        self.ivars: list[str] = []    # int scalars readable here
        self.loopvars: dict[str, str] = {}   # name -> axis size it indexes ("n" / "m")
        self.readable_f1: list[str] = list(FLOAT_ARRAYS_1D)   # float arrays of size n
        self.readable_i1: list[str] = list(INT_ARRAYS_1D)
        self.readable_f2: list[str] = ["A"]
        self.readable_i2: list[str] = ["B"]
        self.own: dict[str, tuple] = {}      # array -> own-index tuple readable in this loop
        self.ploopvars: list[str] = []       # prange variables enclosing (outer first)

    def child(self):
        c = copy.copy(self)
        c.fvars, c.ivars = list(self.fvars), list(self.ivars)
        c.loopvars, c.own = dict(self.loopvars), dict(self.own)
        c.ploopvars = list(self.ploopvars)
        return c


class Gen:
    def __init__(self, rng: random.Random, whiles: random.Random | None = None):
        self.r = rng
        # the counted while loops' own draws (None: none), apart from `r`, so that
        # a program none of whose loops became one is the one its seed made before
        self.whiles = whiles
        self.counter = 0
        self.reductions: list[tuple[str, str]] = []   # (name, kind)
        self.free_reductions: list[tuple[str, str]] = []   # not yet updated in this loop
        self.returns: list[str] = []
        self.ret_kinds: dict[str, str] = {}

    def fresh(self, p):
        self.counter += 1
        return f"{p}{self.counter}"

    def chance(self, p):
        return self.r.random() < p

    # ---- indices ----------------------------------------------------------------------
    def index(self, sc: Scope, size: str, d: int) -> E:
        r = self.r
        direct = [v for v, s in sc.loopvars.items() if s == size]
        c = r.random()
        if direct and c < 0.45:
            return E(f"ix:{size}", r.choice(direct))
        if direct and c < 0.55:
            return E(f"ix:{size}", f"{r.choice(direct)} - 1")   # -1 wraps (sizes >= 1)
        inner = self.iexpr(sc, min(d, 1))
        if direct and self.chance(0.6):
            v = r.choice(direct)
            inner = E("i", f"{r.choice(['', '2 * ', '3 * '])}{v} + {{0}}", [inner])
        if self.chance(0.5):
            return E(f"ix:{size}", f"min(max({{0}}, 0), {size} - 1)", [inner])
        return E(f"ix:{size}", f"({{0}}) % {size}", [inner])

    def read_f(self, sc: Scope, d: int) -> E | None:
        opts = []
        if sc.readable_f1:
            opts.append("1")
        if sc.readable_f2:
            opts.append("2")
        own = [(a, ix) for a, ix in sc.own.items() if a in ("out1", "out2")]
        if own and self.chance(0.15):
            a, ix = self.r.choice(own)
            return E("f", f"{a}[{', '.join(ix)}]")
        if not opts:
            return None
        if self.r.choice(opts) == "1":
            return E("f", self.r.choice(sc.readable_f1) + "[{0}]", [self.index(sc, "n", d)])
        return E("f", self.r.choice(sc.readable_f2) + "[{0}, {1}]",
                 [self.index(sc, "n", d), self.index(sc, "m", d)])

    def read_i(self, sc: Scope, d: int) -> E:
        if "iout" in sc.own and self.chance(0.1):
            return E("i", f"iout[{', '.join(sc.own['iout'])}]")
        if sc.readable_i2 and self.chance(0.3):
            return E("i", self.r.choice(sc.readable_i2) + "[{0}, {1}]",
                     [self.index(sc, "n", d), self.index(sc, "m", d)])
        return E("i", self.r.choice(sc.readable_i1) + "[{0}]", [self.index(sc, "n", d)])

    # ---- expressions ------------------------------------------------------------------
    def fexpr(self, sc: Scope, d: int) -> E:
        r = self.r
        if d <= 0 or self.chance(0.25):
            c = r.random()
            if c < 0.45:
                e = self.read_f(sc, d)
                if e is not None:
                    return e
            if c < 0.7 and sc.fvars:
                return E("f", r.choice(sc.fvars))
            if c < 0.8:
                return E("f", "alpha")
            return E("f", r.choice(["0.5", "1.25", "-2.0", "3.0", "0.1", "-0.75"]))
        k = r.randrange(15)
        a = lambda: self.fexpr(sc, d - 1)  # noqa: E731
        if k <= 3:
            return E("f", "({0} %s {1})" % r.choice("+-*+"), [a(), a()])
        if k == 4:
            return E("f", "({0} / (1.0 + abs({1})))", [a(), a()])
        if k == 5:
            fn = r.choice(["np.sin", "np.cos", "np.tanh", "math.sin", "math.cos",
                           "math.tanh", "np.arctan", "math.atan"])
            return E("f", fn + "({0})", [a()])
        if k == 6:
            fn = r.choice(["np.sqrt(abs({0}))", "math.sqrt(abs({0}))", "abs({0})",
                           "np.abs({0})", "np.floor({0})", "math.fabs({0})",
                           "np.exp(np.tanh({0}))", "math.log1p(abs({0}))", "np.square({0})",
                           "np.sign({0})", "math.hypot({0}, 1.0)"])
            return E("f", fn, [a()])
        if k == 7:
            return E("f", r.choice(["min({0}, {1})", "max({0}, {1})", "np.minimum({0}, {1})",
                                    "np.maximum({0}, {1})", "np.arctan2({0}, {1})",
                                    "math.copysign({0}, {1})"]), [a(), a()])
        if k == 8:
            return E("f", "float({0})", [self.iexpr(sc, d - 1)])
        if k == 9:
            return E("f", "({0} if {1} else {2})", [a(), self.bexpr(sc, d - 1), a()])
        if k == 10:
            return E("f", "({0} * {1})", [a(), E("f", r.choice(["2.0", "0.5", "alpha"]))])
        if k == 11 and sc.ploopvars and self.chance(0.5):
            # a row view of the iteration's own row (a temporary in the body)
            v = sc.ploopvars[0]
            fn = r.choice(["np.sum(A[{v}])", "A[{v}].max()", "A[{v}, :].min()",
                           "np.sum(A[{v}] * 0.5)", "B[{v}].sum() * 0.25"])
            return E("f", fn.format(v=v))
        e = self.read_f(sc, d)
        return e if e is not None else E("f", "alpha")

    def iexpr(self, sc: Scope, d: int) -> E:
        r = self.r
        if d <= 0 or self.chance(0.3):
            c = r.random()
            if c < 0.3 and sc.loopvars:
                return E("i", r.choice(list(sc.loopvars)))
            if c < 0.55:
                return self.read_i(sc, d)
            if c < 0.7 and sc.ivars:
                return E("i", r.choice(sc.ivars))
            if c < 0.75:
                return E("i", r.choice(["n", "m", "kk"]))
            return E("i", str(r.choice([0, 1, 2, 3, 5, 7, -1, -4, 100])))
        k = r.randrange(12)
        a = lambda: self.iexpr(sc, d - 1)  # noqa: E731
        if k <= 3:
            return E("i", "({0} %s {1})" % r.choice("+-*+-^&|"), [a(), a()])
        if k == 4:
            return E("i", "({0} %s (abs({1}) + 1))" % r.choice(["//", "%"]), [a(), a()])
        if k == 5:
            return E("i", "({0} %s %d)" % (r.choice([">>", "<<", "&"]), r.randint(0, 7)), [a()])
        if k == 6:
            return E("i", r.choice(["min({0}, {1})", "max({0}, {1})"]), [a(), a()])
        if k == 7:
            arr = r.choice(FLOAT_ARRAYS_1D)
            arr = arr if arr in sc.readable_f1 else "x"
            return E("i", "int(%s[{0}] * %s)" % (arr, r.choice(["10.0", "3.0", "100.0"])),
                     [self.index(sc, "n", d - 1)])
        if k == 8:
            return E("i", "({0} if {1} else {2})", [a(), self.bexpr(sc, d - 1), a()])
        if k == 9:
            return E("i", "abs({0})", [a()])
        if k == 10:
            return E("i", "(-{0})", [a()])
        return self.read_i(sc, d)

    def bexpr(self, sc: Scope, d: int) -> E:
        r = self.r
        k = r.randrange(6)
        if k <= 1:
            return E("b", "({0} %s {1})" % r.choice(["<", ">", "<=", ">="]),
                     [self.fexpr(sc, max(d - 1, 0)), self.fexpr(sc, max(d - 1, 0))])
        if k == 2:
            return E("b", "({0} %s {1})" % r.choice(["<", "==", "!=", ">="]),
                     [self.iexpr(sc, max(d - 1, 0)), self.iexpr(sc, max(d - 1, 0))])
        if k == 3:
            return E("b", "({0} %% %d == 0)" % r.randint(2, 4), [self.iexpr(sc, max(d - 1, 0))])
        if k == 4 and d > 0:
            op = r.choice(["and", "or"])
            return E("b", "({0} %s {1})" % op, [self.bexpr(sc, d - 1), self.bexpr(sc, d - 1)])
        if d > 0 and self.chance(0.5):
            return E("b", "(not {0})", [self.bexpr(sc, d - 1)])
        return E("b", "({0} > {1})", [self.fexpr(sc, 0), E("f", "0.0")])

    # ---- statements -------------------------------------------------------------------
    def reduction_update(self, sc: Scope, d: int) -> S:
        # Numba's parfor pass accepts one update statement per reduction and loop
        name, kind = self.r.choice(self.free_reductions)
        self.free_reductions.remove((name, kind))
        if kind == "fsum":
            op = self.r.choice(["+=", "-="])
            return S(f"{name} {op} {{0}}", [self.fexpr(sc, d)],
                     shadow=f"{name}__abs += abs({{0}})")
        if kind == "fprod":
            return S(f"{name} *= (1.0 + 0.125 * np.tanh({{0}}))", [self.fexpr(sc, d)])
        if kind in ("fmin", "fmax", "imin", "imax"):
            fn = kind[1:]
            e = self.fexpr(sc, d) if kind[0] == "f" else self.iexpr(sc, d)
            return S(f"{name} = {fn}({name}, {{0}})", [e])
        if kind == "isum":
            return S(f"{name} {self.r.choice(['+=', '-='])} {{0}}", [self.iexpr(sc, d)])
        # iprod: wraps, exact in any order
        return S(f"{name} *= (({{0}}) % 3 + 1)", [self.iexpr(sc, d)])

    def writes(self, sc: Scope, d: int, writable: list[str], ix1: str | None,
               ix2: tuple | None) -> S | None:
        opts = []
        if "out1" in writable and ix1:
            opts.append(("out1", ix1))
        if "iout" in writable and ix1:
            opts.append(("iout", ix1))
        if "out2" in writable and ix2:
            opts.append(("out2", ", ".join(ix2)))
        if not opts:
            return None
        a, ix = self.r.choice(opts)
        if a == "iout":
            return S(f"iout[{ix}] {self.r.choice(['=', '=', '+='])} {{0}}", [self.iexpr(sc, d)])
        return S(f"{a}[{ix}] {self.r.choice(['=', '=', '=', '+='])} {{0}}",
                 [self.fexpr(sc, d)])

    def body(self, sc: Scope, depth: int, level: str, writable: list[str], ix1, ix2,
             nstmts: int, allow_red: bool) -> list:
        """level: "p" (prange body), "r" (inner range body), "w" (inner while
        body: `break` only, since a `continue` would skip the counter's step)."""
        out = []
        for _ in range(nstmts):
            k = self.r.random()
            d = self.r.randint(1, 3)
            if k < 0.18:
                if self.r.random() < 0.5:
                    name = self.fresh("t")
                    out.append(S(f"{name} = {{0}}", [self.fexpr(sc, d)]))
                    sc.fvars.append(name)
                else:
                    name = self.fresh("k")
                    out.append(S(f"{name} = {{0}}", [self.iexpr(sc, d)]))
                    sc.ivars.append(name)
            elif k < 0.42:
                w = self.writes(sc, d, writable, ix1, ix2)
                if w:
                    out.append(w)
            elif k < 0.6 and allow_red and self.free_reductions:
                out.append(self.reduction_update(sc, d))
            elif k < 0.72 and depth > 0:
                then = self.body(sc.child(), depth - 1, level, writable, ix1, ix2,
                                 self.r.randint(1, 2), allow_red)
                orelse = None
                if self.chance(0.4):
                    orelse = self.body(sc.child(), depth - 1, level, writable, ix1, ix2,
                                       self.r.randint(1, 2), allow_red)
                out.append(S("if {0}:", [self.bexpr(sc, 1)], body=then, orelse=orelse))
            elif k < 0.78:
                coin = level != "p" and self.chance(0.3)
                brk = "break" if level == "w" or coin else "continue"
                out.append(S("if {0}:", [self.bexpr(sc, 1)], body=[S(brk)]))
            elif k < 0.92 and level == "p" and depth > 0:
                out.extend(self.inner_range(sc, depth - 1, writable, ix1, allow_red))
            else:
                w = self.writes(sc, d, writable, ix1, ix2)
                if w:
                    out.append(w)
        return out

    def inner_range(self, sc: Scope, depth: int, writable, ix1, allow_red) -> list:
        r = self.r
        j = self.fresh("j")
        forms = [("range(m)", "m"), ("range(m)", "m"), ("range(1, m)", "m"),
                 ("range(m - 1, -1, -1)", "m"), ("range(n)", "n")]
        if sc.ploopvars:
            forms.append((f"range({sc.ploopvars[0]} + 1)", "n"))
        rng, size = r.choice(forms)
        # a counted while loop instead (compiler/narrow_counters.py): the counter's
        # test in each orientation, a second condition after it, steps 1 and 2
        w = self.whiles
        counted = w is not None and w.random() < 0.25
        if counted:
            size = w.choice(["m", "m", "n"])
            test = w.choice([f"{j} < {size}", f"{size} > {j}", f"{j} <= {size} - 1"])
            start, step = w.choice(["0", "0", "1"]), w.choice([1, 1, 2])
            # made before the body, which may add variables this test must not read
            also = self._drawing_from(w, lambda: self.bexpr(sc, 1)) if w.random() < 0.5 \
                else None
        stmts = [S(f"{j} = {start}")] if counted else []
        inner = sc.child()
        inner.loopvars[j] = size
        # a carried scalar: a sum, a min/max, or a contracting recurrence
        carried = None
        if self.chance(0.6):
            carried = self.fresh("c")
            stmts.append(S(f"{carried} = 0.0"))
        ix2 = (ix1, j) if (ix1 and size == "m") else None
        b = []
        if carried:
            kind = r.randrange(4)
            e = self.fexpr(inner, 2)
            if kind == 0:
                b.append(S(f"{carried} += {{0}}", [e]))
            elif kind == 1:
                b.append(S(f"{carried} = max({carried}, {{0}})", [e]))
            elif kind == 2:
                b.append(S(f"{carried} = 0.5 * {carried} + {{0}}", [e]))
            else:
                b.append(S(f"{carried} -= {{0}}", [e]))
        rest = self.body(inner, depth, "w" if counted else "r", writable, ix1, ix2,
                         r.randint(1, 3), allow_red)
        at = r.randint(0, len(rest))
        b = rest[:at] + b + rest[at:]
        if not counted:
            stmts.append(S(f"for {j} in {rng}:", body=b))
        elif also is not None:       # the counter's test short-circuits the other one
            stmts.append(S(f"while {test} and {{0}}:", [also],
                           body=b + [S(f"{j} += {step}", removable=False)]))
        else:
            stmts.append(S(f"while {test}:", body=b + [S(f"{j} += {step}", removable=False)]))
        if carried:
            sc.fvars.append(carried)
        return stmts

    def _drawing_from(self, rng: random.Random, make):
        saved, self.r = self.r, rng
        try:
            return make()
        finally:
            self.r = saved

    def ploop(self, sc: Scope, written_before: set) -> list:
        """One prange loop (maybe nested) writing a random subset of the outputs."""
        r = self.r
        outs = ["out1", "out2", "iout"]
        writable = [o for o in outs if self.chance(0.6)] or ["out1"]
        lsc = sc.child()
        lsc.readable_f1 = FLOAT_ARRAYS_1D + [o for o in ("out1",) if o in written_before
                                              and o not in writable]
        lsc.readable_f1 += [v for v in sc.readable_f1 if v.startswith("v")]
        lsc.readable_f2 = ["A"] + (["out2"] if "out2" in written_before
                                   and "out2" not in writable else [])
        lsc.readable_i1 = INT_ARRAYS_1D + (["iout"] if "iout" in written_before
                                           and "iout" not in writable else [])
        self.free_reductions = list(self.reductions)
        i = self.fresh("i")
        form = r.choice(["prange(n)"] * 5 + ["prange(1, n)", "prange(n - 1, -1, -1)",
                                             "prange(0, n, 2)", "prange(n - 1)"])
        lsc.loopvars[i] = "n"
        lsc.ploopvars = [i]
        for o in writable:
            if o in written_before or self.chance(0.5):
                lsc.own[o] = (i,) if o != "out2" else None
        lsc.own = {k: v for k, v in lsc.own.items() if v}
        if "out2" in writable and self.chance(0.25):
            # perfectly nested prange (or not perfect: statements beside the inner loop)
            j = self.fresh("j")
            isc = lsc.child()
            isc.loopvars[j] = "m"
            isc.ploopvars = [i, j]
            if "out2" in written_before:
                isc.own["out2"] = (i, j)
            b = self.body(isc, 1, "p", ["out2"], None, (i, j), r.randint(1, 3),
                          allow_red=self.chance(0.3))
            b.append(S(f"out2[{i}, {j}] = {{0}}", [self.fexpr(isc, 2)]))
            inner = [S(f"for {j} in prange(m):", body=b)]
            if self.chance(0.4):
                pre = self.body(lsc, 1, "p", [w for w in writable if w != "out2"], i, None,
                                r.randint(1, 2), allow_red=True)
                inner = pre + inner
            return [S(f"for {i} in {form}:", body=inner)]
        b = self.body(lsc, 2, "p", writable, i, None, r.randint(2, 6), allow_red=True)
        return [S(f"for {i} in {form}:", body=b)]

    def arrexpr(self, d: int) -> E:
        r = self.r
        if d <= 0 or self.chance(0.3):
            return E("x", r.choice(["x", "x2", "x", "alpha", "0.5", "y * 0.5",
                                    "np.abs(z) * 0.1"]))
        a = lambda: self.arrexpr(d - 1)  # noqa: E731
        k = r.randrange(5)
        if k <= 1:
            return E("x", "({0} %s {1})" % r.choice("+-*"), [a(), a()])
        if k == 2:
            return E("x", r.choice(["np.sin({0})", "np.cos({0})", "np.sqrt(np.abs({0}))",
                                    "np.tanh({0})", "np.abs({0})", "np.floor({0})"]), [a()])
        if k == 3:
            return E("x", r.choice(["np.minimum({0}, {1})", "np.maximum({0}, {1})",
                                    "np.where(x > 0.0, {0}, {1})"]), [a(), a()])
        return E("x", "np.clip(x2 * {0}, -1.0, 1.0)", [a()])

    def program(self) -> Program:
        r = self.r
        nred = r.randint(0, 4)
        kinds = ["fsum", "fsum", "fprod", "fmin", "fmax", "isum", "iprod", "imin", "imax"]
        init = {"fsum": "0.0", "fprod": "1.0", "fmin": "np.inf", "fmax": "-np.inf",
                "isum": "0", "iprod": "1", "imin": "1 << 62", "imax": "-(1 << 62)"}
        stmts = []
        sc = Scope()
        # serial prologue: an array expression, NumPy reductions as loop invariants
        if self.chance(0.35):
            v = self.fresh("v")
            # `x * c + e`: an array even when e is a scalar
            stmts.append(S(f"{v} = x * 0.25 + {{0}}", [self.arrexpr(2)]))
            sc.readable_f1 = sc.readable_f1 + [v]
        if self.chance(0.3):
            name = self.fresh("g")
            stmts.append(S(f"{name} = {r.choice(['np.max(x)', 'x.min()', 'np.sum(x2) * 0.01', 'np.mean(A)', 'float(np.argmax(x))', 'np.dot(x, x2) * 0.1', 'float(y.sum())'])}"))
            sc.fvars.append(name)
        for _ in range(nred):
            kind = r.choice(kinds)
            name = self.fresh("s" if kind[0] == "f" else "q")
            self.reductions.append((name, kind))
            self.returns.append(name)
            self.ret_kinds[name] = {"fsum": "fsum", "fprod": "fprod"}.get(
                kind, "fexact" if kind[0] == "f" else "i")
            stmts.append(S(f"{name} = {init[kind]}"))
        written = set()
        for li in range(r.choice([1, 1, 1, 2, 2, 3])):
            loop = self.ploop(sc, written)
            stmts.extend(loop)
            for o in ("out1", "out2", "iout"):
                if _mentions(loop, o + "["):
                    written.add(o)
            if li == 0 and self.reductions and self.chance(0.4):
                # a scalar from the reductions, an invariant of the later loops
                name, kind = self.reductions[0]
                g = self.fresh("g")
                expr = f"{name} * 0.001" if kind[0] == "f" else f"float({name} % 97)"
                if kind in ("fmin", "fmax", "fprod"):
                    expr = f"min(max({name}, -1e3), 1e3)"
                stmts.append(S(f"{g} = {expr}"))
                sc.fvars.append(g)
                # the later loops start new reductions
                self.reductions = []
        return Program(stmts, self.returns, self.ret_kinds)


def _mentions(stmts, text) -> bool:
    for s in stmts:
        if text in s.head():
            return True
        if s.body and _mentions(s.body, text):
            return True
        if s.orelse and _mentions(s.orelse, text):
            return True
    return False


_RED_UPDATE = re.compile(r"^([sq]\d+) (\+=|-=|\*=|= min\(|= max\()")


def known_bug_pattern(prog: Program) -> str:
    """The name of a known bug whose pattern the program has, else "". Used to group
    failures: "reduction-in-branch-loop" is a prange reduction updated inside a `range`
    loop that is inside an `if` of the prange body, whose updates Numba's parfor pass
    (Numba 0.68.1, Python 3.11) lost (test_bug_reduction_in_loop_in_branch); fixed by
    frontend/loop_exits.py, so a failure with this tag is a regression of that fix."""
    def walk(stmts, in_if, in_loop_in_if):
        for st in stmts:
            if in_loop_in_if and _RED_UPDATE.match(st.fmt):
                return True
            if st.body is not None:
                is_if = st.fmt.startswith("if ")
                is_range = st.fmt.startswith("for ") and " in range(" in st.fmt
                if walk(st.body, in_if or is_if, in_loop_in_if or (in_if and is_range)):
                    return True
                if st.orelse is not None and walk(st.orelse, True, in_loop_in_if):
                    return True
        return False
    return "reduction-in-branch-loop" if walk(prog.stmts, False, False) else ""


# counted while loops in the programs (`--no-whiles`: off, for the seeds of campaigns
# run before they came); a process-wide switch, so that the forked workers see it
WHILES = True


def generate(seed: int, whiles: bool | None = None) -> Program:
    """The program of `seed`; `whiles=False` (default: WHILES): without counted
    while loops (the grammar before they came: the program the seed made then)."""
    whiles = WHILES if whiles is None else whiles
    return Gen(random.Random(seed), random.Random(seed ^ 0x5EED) if whiles else None).program()


# --------------------------------------------------------------------------------------
# Inputs, running, comparing
# --------------------------------------------------------------------------------------

SIZES = [(1, 1), (2, 3), (3, 1), (5, 4), (8, 7), (13, 2), (31, 5), (64, 3), (100, 16),
         (47, 33)]


def make_inputs(seed: int, n: int, m: int):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-10, 10, n)
    x2 = rng.uniform(-3, 3, n)
    y = rng.integers(-50, 50, n).astype(np.int64)
    if n > 2 and rng.random() < 0.3:
        y[rng.integers(0, n)] = rng.choice([2**40 + 3, -(2**35), 2**62])
    z = rng.integers(-1000, 1000, n).astype(np.int32)
    A = rng.uniform(-5, 5, (n, m))
    B = rng.integers(-20, 20, (n, m)).astype(np.int64)
    out1 = rng.uniform(-1, 1, n)
    out2 = rng.uniform(-1, 1, (n, m))
    iout = rng.integers(-5, 5, n).astype(np.int64)
    return [x, x2, y, z, A, B, out1, out2, iout, float(rng.uniform(-2, 2)),
            int(rng.integers(-5, 6))]


ARG_NAMES = ["x", "x2", "y", "z", "A", "B", "out1", "out2", "iout", "alpha", "kk"]
RTOL = 1e-9


class Mismatch(Exception):
    pass


def _close(g, e, tol_abs, what):
    g, e = np.asarray(g), np.asarray(e)
    if g.shape != e.shape:
        raise Mismatch(f"{what}: shape {g.shape} != {e.shape}")
    if not (np.issubdtype(e.dtype, np.floating) or np.issubdtype(g.dtype, np.floating)):
        if not np.array_equal(g, e):
            bad = np.argwhere(g != e)[:5].tolist() if g.ndim else []
            raise Mismatch(f"{what}: {g!r} != {e!r} (first differing {bad})"
                           if g.size <= 8 else f"{what}: differ at {bad}: got "
                           f"{[g[tuple(b)] for b in bad]} expected {[e[tuple(b)] for b in bad]}")
        return
    if np.issubdtype(e.dtype, np.floating) != np.issubdtype(g.dtype, np.floating):
        raise Mismatch(f"{what}: dtype {g.dtype} != {e.dtype}")
    g = g.astype(np.float64)
    e = e.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(e)):
        raise Mismatch(f"{what}: NaNs differ: got {g!r} expected {e!r}")
    ok = np.isnan(e) | (g == e) | (np.abs(g - e) <= tol_abs)
    if not np.all(ok):
        bad = np.argwhere(~ok)[:5].tolist() if g.ndim else [[]]
        gi = [g[tuple(b)] for b in bad]
        ei = [e[tuple(b)] for b in bad]
        raise Mismatch(f"{what}: differ at {bad}: got {gi} expected {ei} "
                       f"(tolerance {np.max(tol_abs) if np.size(tol_abs) else tol_abs:.3g})")


def compare(prog: Program, got, expected, got_args, exp_args):
    """expected: the oracle's tuple (returns, then |terms| sums of the float sums)."""
    nret = len(prog.returns)
    if not isinstance(got, tuple) or len(got) != nret:
        raise Mismatch(f"result {got!r} is not a {nret}-tuple")
    shadows = dict(zip([r for r in prog.returns if prog.ret_kinds[r] == "fsum"],
                       expected[nret:])) if isinstance(prog, Program) else {}
    for name, g, e in zip(prog.returns, got, expected[:nret]):
        kind = prog.ret_kinds[name]
        if kind == "i":
            if type(g) is float or isinstance(g, np.floating):
                raise Mismatch(f"{name}: float {g!r} where the oracle gives int {e!r}")
            _close(g, e, 0, name)
        elif kind == "fsum":
            # any order of the additions is within (N - 1) eps sum|t_k| of the exact sum;
            # N < 4.5e6 terms, so RTOL * sum|t_k| bounds the difference of two orders
            _close(g, e, RTOL * shadows.get(name, abs(e)) + 1e-300, name)
        elif kind == "fprod":
            # up to 10,000 factors in [0.875, 1.125] may leave float64's range: another
            # order rounds differently through subnormals or overflows elsewhere
            if abs(e) > 1e300 and abs(g) > 1e300 and np.sign(g) == np.sign(e):
                continue
            _close(g, e, RTOL * abs(e) + 1e-290, name)
        else:
            # min/max select one of their operands exactly, but an operand computed by a
            # math function may differ in its last bits between targets (libm, MLIR's
            # math lowering, libdevice): a relative 1e-9 (plus 1e-9 absolute)
            _close(g, e, RTOL * (1.0 + abs(e)), name)
    for a, (g, e) in enumerate(zip(got_args, exp_args)):
        if isinstance(e, np.ndarray):
            scale = float(np.max(np.abs(e))) if e.size else 0.0
            _close(g, e, RTOL * (1.0 + scale), f"{ARG_NAMES[a]} after the call")


def compile_source(src: str):
    import math as _m
    from numba import prange
    g = {"np": np, "math": _m, "prange": prange}
    exec(compile(src, "<generated>", "exec"), g)
    return g["f"]


@dataclass
class Outcome:
    status: str          # pass | refused | failed | invalid
    detail: str = ""
    kind: str = ""       # failure signature, for grouping and shrinking


class Source:
    """A program given as text (a saved reproducer): its floats returned are compared
    exactly unless listed in ret_kinds ("fsum" sums get rtol * |result| here, having no
    |terms| sum)."""
    def __init__(self, text, returns=(), ret_kinds=None):
        self.text, self.returns = text, list(returns)
        self.ret_kinds = ret_kinds or {r: "fexact" for r in self.returns}

    def source(self, oracle=False):
        return self.text


def run_program(prog: Program, target: str, seed: int, sizes=None) -> Outcome:
    import numba
    import numba_mlir_gpu
    src, osrc = prog.source(), prog.source(oracle=True)
    try:
        oracle = numba.njit(compile_source(osrc))
        ref_runs = []
        for n, m in sizes or _sizes_for(seed):
            args = make_inputs(seed * 7919 + n * 31 + m, n, m)
            ra = copy.deepcopy(args)
            ref_runs.append((args, ra, oracle(*ra)))
    except Exception as ex:     # the generator made something Numba rejects
        return Outcome("invalid", f"{type(ex).__name__}: {str(ex)[:300]}")
    ours = numba_mlir_gpu.njit(target=target, fallback=False)(compile_source(src))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for args, ra, expected in ref_runs:
                oa = copy.deepcopy(args)
                got = ours(*oa)
                compare(prog, got, expected, oa, ra)
    except numba_mlir_gpu.UnsupportedConstructError as ex:
        first = str(ex).strip().splitlines()[0] if str(ex).strip() else ""
        return Outcome("refused", first[:200], "refused")
    except CompileOnlyError:        # target "compile-only": the GPU code was built
        return Outcome("pass")
    except Mismatch as ex:
        note = _numba_parallel_note(prog, seed, args, ra, expected)
        return Outcome("failed", f"mismatch (n={len(args[0])}, m={args[4].shape[1]}): {ex}"
                       f"{note}", "mismatch")
    except Exception as ex:
        tb = traceback.format_exc(limit=-3)
        msg = str(ex).strip().splitlines()
        return Outcome("failed", f"{type(ex).__name__}: {chr(10).join(msg[:6])[:1500]}\n{tb[-800:]}",
                       type(ex).__name__)
    return Outcome("pass")


def _numba_parallel_note(prog, seed, args, ra, expected) -> str:
    """Triage of a mismatch: does Numba's own njit(parallel=True) (its parfor lowering)
    differ from the serial oracle too? Then the parfor pass, shared by both, is the
    likely cause."""
    import numba
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pa = copy.deepcopy(args)
            got = numba.njit(parallel=True)(compile_source(prog.source()))(*pa)
            compare(prog, got, expected, pa, ra)
    except Mismatch as ex:
        return f" [Numba parallel=True differs too: {str(ex)[:200]}]"
    except Exception as ex:
        return f" [Numba parallel=True raises {type(ex).__name__}]"
    return " [Numba parallel=True agrees with the oracle]"


def _sizes_for(seed: int):
    r = random.Random(seed ^ 0x5EED)
    return r.sample(SIZES, 2)


# --------------------------------------------------------------------------------------
# Shrinking: delta debugging over the tree while the failure keeps its kind
# --------------------------------------------------------------------------------------

def _stmt_lists(stmts):
    """Every statement list of the tree (for deletions)."""
    yield stmts
    for s in stmts:
        if s.body is not None:
            yield from _stmt_lists(s.body)
        if s.orelse is not None:
            yield from _stmt_lists(s.orelse)


def _exprs(stmts):
    """Every (parent list, index) slot holding an expression."""
    for s in stmts:
        for k in range(len(s.exprs)):
            yield from _expr_slots(s.exprs, k)
        if s.body is not None:
            yield from _exprs(s.body)
        if s.orelse is not None:
            yield from _exprs(s.orelse)


def _expr_slots(lst, k):
    yield lst, k
    for j in range(len(lst[k].kids)):
        yield from _expr_slots(lst[k].kids, j)


def _candidates(prog: Program):
    """Smaller variants, each a fresh deep copy (largest reductions first)."""
    n = len(list(_stmt_lists(prog.stmts)))
    # delete statements (a whole block at once first)
    for li in range(n):
        lists = list(_stmt_lists(prog.stmts))
        for si in range(len(lists[li]) - 1, -1, -1):
            p = copy.deepcopy(prog)
            lst = list(_stmt_lists(p.stmts))[li]
            if si >= len(lst) or not lst[si].removable:
                continue
            s = lst.pop(si)
            yield p
            # inline an if's branches
            if s.fmt == "if {0}:" and s.body and s.body[0].fmt not in ("continue", "break"):
                for br in (s.body, s.orelse):
                    if br:
                        q = copy.deepcopy(p)
                        ql = list(_stmt_lists(q.stmts))[li]
                        ql[si:si] = copy.deepcopy(br)
                        yield q
            elif s.fmt.startswith("for ") and s.body:
                # the loop's body once, its variable bound to the first value
                var = s.fmt.split()[1]
                q = copy.deepcopy(p)
                ql = list(_stmt_lists(q.stmts))[li]
                ql[si:si] = [S(f"{var} = 0")] + copy.deepcopy(s.body)
                yield q
            elif s.orelse is not None:
                q = copy.deepcopy(p)
                ql = list(_stmt_lists(q.stmts))[li]
                s2 = copy.deepcopy(s)
                s2.orelse = None
                ql.insert(si, s2)
                yield q
    # drop returned values
    for ri in range(len(prog.returns)):
        p = copy.deepcopy(prog)
        p.returns.pop(ri)
        yield p
    # simplify expressions
    slots = list(_exprs(prog.stmts))
    for si in range(len(slots)):
        lst, k = slots[si]
        e = lst[k]
        repl = []
        if e.typ in LEAF and e.fmt != LEAF[e.typ]:
            repl.append(E(e.typ, LEAF[e.typ]))
        if e.typ.startswith("ix:") and e.fmt != "0":
            repl.append(E(e.typ, "0"))
        for kid in e.kids:
            if kid.typ == e.typ and e.typ != "x":
                repl.append(kid)
        for rep in repl:
            p = copy.deepcopy(prog)
            plst, pk = list(_exprs(p.stmts))[si]
            plst[pk] = copy.deepcopy(rep)
            yield p


def run_in_child(prog: Program, target: str, seed: int, sizes=None,
                 runner: Callable = None) -> Outcome:
    """run_program (or `runner`, a module-level function) in a new process:
    one that dies is a failure of kind "crash" (an abort inside MLIR or
    LLVM), one that runs past HANG_AFTER seconds of kind "hang". Spawned,
    not forked: the shrinker's process has compiled."""
    return next(run_isolated(_run_args, [(runner or run_program, prog, target, seed, sizes)],
                             1, _crashed, start="spawn", limit=HANG_AFTER))


def _run_args(w):
    runner, *args = w
    return runner(*args)


def _crashed(w, code):
    if code == "timeout":
        return Outcome("failed", f"the program ran past {HANG_AFTER} s", "hang")
    return Outcome("failed", f"the program's process died (exit code {code})", "crash")


def shrink(prog: Program, target: str, seed: int, kind: str, budget_s: float = 240.0,
           log=None) -> tuple[Program, Outcome, list]:
    start = time.time()
    # a failure that kills its process or hangs is reproduced in child processes
    run = run_in_child if kind in ("crash", "hang") else run_program
    sizes = _sizes_for(seed)
    best, best_out = prog, run(prog, target, seed, sizes)
    # the smallest single size that fails
    for sz in sorted(SIZES, key=lambda s: s[0] * s[1]):
        o = run(best, target, seed, [sz])
        if o.status == "failed" and o.kind == kind:
            sizes, best_out = [sz], o
            break
    progress = True
    while progress and time.time() - start < budget_s:
        progress = False
        for cand in _candidates(best):
            if time.time() - start > budget_s:
                break
            if len(cand.source()) >= len(best.source()):
                continue
            o = run(cand, target, seed, sizes)
            if o.status == "failed" and o.kind == kind:
                best, best_out, progress = cand, o, True
                if log:
                    log(f"  shrunk to {len(best.source())} chars")
                break
    return best, best_out, sizes


# --------------------------------------------------------------------------------------
# Campaign
# --------------------------------------------------------------------------------------

# seconds without a result after which the pool's missing programs are taken as lost
LOST_AFTER = 120


# seconds a lost program may take when it runs again alone: past it, it hangs
HANG_AFTER = 300


def _died(w, code):
    seed, _ = w
    if code == "timeout":
        return (seed, "failed", "hang", f"the program ran {HANG_AFTER} s alone without a "
                "result: a hang (compiling or running)", None)
    return (seed, "failed", "crash", f"the program's process died (exit code {code}) without "
            "a result: a crash of the compiler", None)


def _work(args):
    seed, target = args
    import numba_mlir_gpu  # noqa: F401
    t0 = time.time()
    prog = generate(seed)
    out = run_program(prog, target, seed)
    return seed, out.status, out.kind, out.detail, time.time() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="cpu", choices=["cpu", "gpu", "compile-only"])
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0, help="first program's seed")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", help="write a JSON summary (and failures) here")
    ap.add_argument("--shrink", action="store_true", help="shrink each failure")
    ap.add_argument("--shrink-budget", type=float, default=240.0,
                    help="seconds per failure")
    ap.add_argument("--shrink-max", type=int, default=5, help="failures to shrink")
    ap.add_argument("--show", type=int, help="print one seed's program and exit")
    ap.add_argument("--no-whiles", action="store_true",
                    help="no counted while loops (the programs of campaigns before them)")
    args = ap.parse_args(argv)
    global WHILES
    WHILES = not args.no_whiles
    if args.show is not None:
        print(generate(args.show).source())
        return 0
    warnings.simplefilter("ignore")
    seeds = list(range(args.seed, args.seed + args.count))
    t0 = time.time()
    counts = {"pass": 0, "refused": 0, "failed": 0, "invalid": 0}
    refused, failures, invalid = {}, [], {}

    def record(res, done):
        seed, status, kind, detail, _ = res
        counts[status] += 1
        if status == "refused":
            refused[detail] = refused.get(detail, 0) + 1
        elif status == "invalid":
            key = detail[:120]
            invalid.setdefault(key, [0, seed])[0] += 1
        elif status == "failed":
            known = known_bug_pattern(generate(seed))
            failures.append({"seed": seed, "kind": kind, "detail": detail, "known": known,
                             "source": generate(seed).source()})
            print(f"FAIL seed {seed}{' (known: ' + known + ')' if known else ''}: "
                  f"{detail.splitlines()[0][:300]}", flush=True)
        if done % 100 == 0:
            print(f"[{done}/{len(seeds)}] {counts} {time.time() - t0:.0f}s", flush=True)
            if args.out:
                _write(args.out, args, counts, refused, invalid, failures, t0, done)

    work = [(s, args.target) for s in seeds]
    if args.jobs > 1:
        import multiprocessing as mp
        seen, done = set(), 0
        with mp.get_context("fork").Pool(args.jobs, maxtasksperchild=50) as pool:
            results = pool.imap_unordered(_work, work)     # chunks of 1: .next(timeout)
            while True:
                try:
                    res = results.next(timeout=LOST_AFTER)
                except StopIteration:
                    break
                except mp.TimeoutError:     # a worker died: its tasks never come back
                    break
                seen.add(res[0])
                done += 1
                record(res, done)
            pool.terminate()
        # the lost ones again, each in a process of its own: the one that dies is a failure
        lost = [w for w in work if w[0] not in seen]
        if lost:
            print(f"lost after {LOST_AFTER} s: seeds {[w[0] for w in lost][:50]}; each again "
                  "alone", flush=True)
        for res in run_isolated(_work, lost, args.jobs, _died, limit=HANG_AFTER):
            done += 1
            record(res, done)
    else:
        for done, w in enumerate(work, 1):
            record(_work(w), done)
    el = time.time() - t0
    if args.shrink:
        seen = set()
        for f in failures[:args.shrink_max]:
            prog = generate(f["seed"])
            small, out, sizes = shrink(prog, args.target, f["seed"], f["kind"],
                                       args.shrink_budget)
            f["minimal"] = small.source()
            f["minimal_detail"] = out.detail
            f["minimal_sizes"] = sizes
            dup = small.source() in seen
            seen.add(small.source())
            print(f"\n--- seed {f['seed']} ({f['kind']}){' duplicate' if dup else ''}, "
                  f"sizes {sizes}:\n{small.source()}{out.detail}\n", flush=True)
    nknown = sum(1 for f in failures if f["known"])
    print(f"programs {len(seeds)}: passed {counts['pass']}, refused {counts['refused']}, "
          f"failed {counts['failed']} ({nknown} with a known bug's pattern), "
          f"invalid (oracle rejects) {counts['invalid']}; "
          f"{el:.0f} s ({len(seeds) / max(el, 1e-9):.2f} programs/s)")
    for d, c in sorted(refused.items(), key=lambda t: -t[1]):
        print(f"  refused x{c}: {d}")
    for d, (c, s) in sorted(invalid.items(), key=lambda t: -t[1][0]):
        print(f"  invalid x{c} (seed {s}): {d}")
    if args.out:
        _write(args.out, args, counts, refused, invalid, failures, t0, len(seeds))
    return 1 if failures else 0


def _write(path, args, counts, refused, invalid, failures, t0, done):
    with open(path, "w") as fh:
        json.dump({"target": args.target, "seed": args.seed, "count": args.count,
                   "done": done, "counts": counts, "seconds": time.time() - t0,
                   "refused": refused, "invalid": invalid, "failures": failures}, fh,
                  indent=1)


if __name__ == "__main__":
    sys.exit(main())
