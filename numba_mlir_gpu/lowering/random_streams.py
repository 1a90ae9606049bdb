"""Where the random draws of compiled code come from: Philox blocks keyed so
that a draw does not depend on how a parallel loop is scheduled.

The generator's state is process-wide (runtime/random_state.py): a 64-bit
key and a 64-bit stream counter. A draw is one Philox4x32-10 block of the
counter (position: 64 bits, draw number: 64 bits) under the key:

* host code (outside parallel loops): each block takes a fresh position,
  an atomic fetch-and-add of 1 on the counter, draw number 0;
* a parallel loop of N iterations, at the top level, takes N positions at
  once before the loop (one fetch-and-add of N: the loop's `base`); its
  iteration with row-major number i draws at position base + i, draw
  numbers 0, 1, 2, ... in the order its code runs (a per-iteration counter,
  a stack slot);
* a loop inside an iteration (a nested parfor, a filled array) takes one
  draw number of the iteration and derives a base from its block (two of
  its words), then its own iterations draw as above from that base.

So every draw is keyed by (seed, where the loop's positions start, the
iteration's number, the draw's number in the iteration): the same whatever
the block size, the thread count or the chunking, on the CPU and the GPU.
Derived bases are pseudo-random 64-bit positions; two streams overlap only
if two of them fall within a loop's length of each other (odds of about
(trips x streams) / 2^64).
"""
from __future__ import annotations

import random as pyrandom
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional

import numpy as np
from numba.core import ir as nir
from numba.core import types
from numba.parfors.parfor import Parfor

from .._mlir import arith, ir, memref
from .build import const_i64, const_index, to_i64
from .errors import UnsupportedConstructError
from .philox import join_i64, philox4x32_10, split_i64

_I64 = 64

# The process-wide state (runtime/random_state.py: [key, counter]), an
# external global of every module that draws, resolved by each engine.
STATE_SYMBOL = "nmg_random_state"
KEY, COUNTER = 0, 1


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(_I64)


def _state_type() -> ir.MemRefType:
    return ir.MemRefType.get([2], _i64())


def _state(lw) -> ir.Value:
    """The process-wide state (memref<2xi64>: key, counter), declared once
    per module as an external global that the engine resolves."""
    module = lw.mlower.module
    if STATE_SYMBOL not in ir.SymbolTable(module.operation):
        with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
            memref.GlobalOp(STATE_SYMBOL, ir.TypeAttr.get(_state_type()))
    return memref.GetGlobalOp(_state_type(), STATE_SYMBOL).result


def _host_only(lw, what: str, loc) -> None:
    if lw.parallel_depth > 0:
        raise UnsupportedConstructError(
            f"{what} in a function called from a parallel loop (draw in the loop's own "
            "body instead)" if lw.random_stream is None else f"{what} inside a parallel loop",
            loc)


def _take_positions(state: ir.Value, count: ir.Value) -> ir.Value:
    """The counter before adding `count` (i64) to it, atomically."""
    return memref.AtomicRMWOp(arith.AtomicRMWKind.addi, count, state,
                              [const_index(COUNTER)]).result


def seed(lw, value: ir.Value, loc) -> None:
    """np.random.seed: a new key, the counter back to 0."""
    _host_only(lw, "np.random.seed", loc)
    state = _state(lw)
    memref.StoreOp(value, state, [const_index(KEY)])
    memref.StoreOp(const_i64(0), state, [const_index(COUNTER)])


@dataclass
class LoopStream:
    """The positions of one loop's iterations: base + iteration number."""
    key: ir.Value       # i64
    base: ir.Value      # i64


class DrawCounter:
    """The next draw number of an iteration: a stack slot (an iteration of
    Numba's blocks, with branches and loops), or a value the lowering holds
    (an element of a filled array: straight-line code)."""

    def __init__(self, lw, scope=None, in_slot: bool = True):
        self.slot = lw.new_slot(types.int64, scope) if in_slot else None
        self.set(const_i64(0))

    def get(self) -> ir.Value:
        return self.value if self.slot is None else memref.LoadOp(self.slot, []).result

    def set(self, value: ir.Value) -> None:
        if self.slot is None:
            self.value = value
        else:
            memref.StoreOp(value, self.slot, [])


@dataclass
class Stream:
    """The draws of one iteration (or, with no stream, of host code)."""
    key: ir.Value           # i64
    position: ir.Value      # i64
    draws: DrawCounter


def _block(key: ir.Value, position: ir.Value, draw: ir.Value) -> list[ir.Value]:
    return philox4x32_10(split_i64(position) + split_i64(draw), split_i64(key))


class Draws:
    """Blocks for one draw site. A rejection loop carries the draw number
    as a loop value (`start`, then `block(d)` per trial, `finish`), so that
    the per-iteration slot stays out of the loop's region and promotable."""

    def __init__(self, lw, loc):
        self.lw, self.stream = lw, lw.random_stream
        if self.stream is None:
            _host_only(lw, "np.random", loc)
            self.state = _state(lw)
            self.key = memref.LoadOp(self.state, [const_index(KEY)]).result
        else:
            self.key = self.stream.key

    def start(self) -> Optional[ir.Value]:
        """The next draw number (None in host code: none is carried)."""
        if self.stream is None:
            return None
        return self.stream.draws.get()

    def block(self, draw: Optional[ir.Value]) -> tuple[list[ir.Value], Optional[ir.Value]]:
        """The four i32 words of the next block, and the draw number after it."""
        if self.stream is None:
            position = _take_positions(self.state, const_i64(1))
            return _block(self.key, position, const_i64(0)), None
        words = _block(self.key, self.stream.position, draw)
        return words, arith.AddIOp(draw, const_i64(1)).result

    def finish(self, draw: Optional[ir.Value]) -> None:
        if self.stream is not None:
            self.stream.draws.set(draw)

    def next_block(self) -> list[ir.Value]:
        words, after = self.block(self.start())
        self.finish(after)
        return words


def loop_stream(lw, trips: ir.Value, loc) -> LoopStream:
    """Positions for a loop of `trips` iterations (index or i64), taken at the
    current point: from the process-wide counter in host code, else derived
    from one draw of the enclosing iteration."""
    if lw.random_stream is None:
        _host_only(lw, "np.random", loc)
        state = _state(lw)
        key = memref.LoadOp(state, [const_index(KEY)]).result
        return LoopStream(key, _take_positions(state, to_i64(trips)))
    words = Draws(lw, loc).next_block()
    return LoopStream(lw.random_stream.key, join_i64(words[0], words[1]))


@contextmanager
def iteration(lw, loop: Optional[LoopStream], counters: list[ir.Value],
              extents: list[ir.Value], scope=None, in_slot: bool = True):
    """Draws of the code lowered inside come from the iteration of `loop` at
    zero-based `counters` in a box of `extents` (its row-major number); the
    insertion point is the iteration's start. Nothing changes when `loop` is
    None. `in_slot`: the draw number lives in a stack slot of `scope` (else
    the code inside must be straight-line)."""
    if loop is None:
        yield
        return
    draws = DrawCounter(lw, scope, in_slot)
    position = arith.AddIOp(loop.base, row_major(counters, extents)).result
    outer, lw.random_stream = lw.random_stream, Stream(loop.key, position, draws)
    try:
        yield
    finally:
        lw.random_stream = outer


def row_major(counters: list[ir.Value], extents: list[ir.Value]) -> ir.Value:
    """The row-major number (i64) of zero-based `counters` in a box of `extents`."""
    number = const_i64(0)
    for k, extent in zip(counters, extents):
        number = arith.AddIOp(arith.MulIOp(number, to_i64(extent)).result, to_i64(k)).result
    return number


def _functions_of(module) -> frozenset:
    return frozenset(
        getattr(module, name) for name in dir(module)
        if not name.startswith("_") and callable(getattr(module, name))
        and hasattr(getattr(module, name), "__name__")
        and not isinstance(getattr(module, name), type))


# np.random's functions, and Python's random module's (refused but the
# supported ones, which rules/random.py registers).
RANDOM_CALLABLES = _functions_of(np.random)
PYTHON_RANDOM_CALLABLES = _functions_of(pyrandom)


def _is_draw(typemap, stmt) -> bool:
    if not (isinstance(stmt, nir.Assign) and isinstance(stmt.value, nir.Expr)
            and stmt.value.op == "call"):
        return False
    fnty = typemap.get(stmt.value.func.name)
    key = getattr(fnty, "typing_key", None)
    try:
        return key in RANDOM_CALLABLES or key in PYTHON_RANDOM_CALLABLES
    except TypeError:       # unhashable key
        return False


def draws_in(lw, parfor: Parfor) -> bool:
    """Does the body of `parfor` (nested parfors included) call np.random?"""
    blocks = list(parfor.loop_body.values())
    while blocks:
        for stmt in blocks.pop().body:
            if isinstance(stmt, Parfor):
                blocks += list(stmt.loop_body.values()) + [stmt.init_block]
            elif _is_draw(lw.typemap, stmt):
                return True
    return False


def host_draws(func_ir, typemap) -> bool:
    """Does the code outside the parfors of `func_ir` call np.random (or
    Python's random)? Numba's lowering of such code would draw from Numba's
    generator, not this one, so the host fallback must not take it."""
    return any(_is_draw(typemap, stmt) for block in func_ir.blocks.values()
               for stmt in block.body)


def parfor_stream(lw, parfor: Parfor, trips: list[ir.Value]) -> Optional[LoopStream]:
    """The positions of a parfor's iterations, when its body draws."""
    if not draws_in(lw, parfor):
        return None
    total = const_index(1)
    for t in trips:
        total = arith.MulIOp(total, t).result
    return loop_stream(lw, total, parfor.loc)
