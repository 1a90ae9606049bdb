"""Raising exceptions from compiled code.

Every function we emit returns an i32 status first: 0, or the 1-based code
of an entry of the module's ExceptionTable (an exception class and its
constant arguments). Host code branches to the function's error block,
which returns that status; inside a parallel loop (a kernel, maybe) the
iteration stores its status in a flag that host code checks after the loop.
Numba's wrapper turns a non-zero status into the Python exception.
"""
from __future__ import annotations

import contextlib
from typing import Optional

from numba.core import types

from .._mlir import arith, cf, func, ir, memref, scf
from .build import cmpi, const, const_index, select, zero_of

STATUS = types.int32


def status_type() -> ir.Type:
    return ir.IntegerType.get_signless(32)


class ExceptionTable:
    """The exceptions a module can raise, shared by all its functions."""

    def __init__(self):
        self.entries: list[tuple[type, tuple]] = []

    def code_for(self, exc_class: type, args: tuple) -> int:
        entry = (exc_class, tuple(args))
        if entry not in self.entries:
            self.entries.append(entry)
        return self.entries.index(entry) + 1


class FunctionErrors:
    """Error paths of one function."""

    def __init__(self, table: ExceptionTable, fn_region: ir.Region):
        self.table = table
        self.region = fn_region
        self.block: Optional[ir.Block] = None        # ^error(%status: i32)
        self.pending: list[ir.Value] = []            # statuses to check after a statement
        self.flag: Optional[ir.Value] = None         # memref<i32> inside parallel loops
        self._anchor: Optional[ir.Operation] = None  # op before which the flag is made
        self._on_device = False

    def error_block(self) -> ir.Block:
        if self.block is None:
            self.block = self.region.blocks.append(status_type())
        return self.block

    def code(self, exc_class: type, args: tuple) -> ir.Value:
        return const(STATUS, self.table.code_for(exc_class, args))

    def raise_status(self, lw, status: ir.Value) -> None:
        """Leave the current block raising `status` (a terminator)."""
        if lw.body_depth == 0:
            cf.BranchOp([status], self.error_block())
            return
        memref.StoreOp(status, self.require_flag(lw), [])
        lw.jump_out()

    def raise_if(self, lw, failed: ir.Value, status: ir.Value) -> None:
        """Raise `status` when `failed`, checked after the current statement."""
        self.pending.append(select(failed, status, const(STATUS, 0)))

    def pending_status(self) -> ir.Value:
        """The first nonzero status of the pending checks (0: none failed);
        they are no longer pending. For code that lowers statements inside a
        region and must carry their status out of it."""
        status = self.pending[0] if self.pending else const(STATUS, 0)
        for other in self.pending[1:]:
            status = select(cmpi("ne", status, const(STATUS, 0)), status, other)
        self.pending.clear()
        return status

    def checkpoint(self) -> tuple:
        """The state `rollback` returns to, once the operations emitted
        after this call are erased (a lowering tried and given up)."""
        return list(self.pending), self.flag

    def rollback(self, saved: tuple) -> None:
        # a flag made since lives in the erased operations
        self.pending[:], self.flag = saved

    def check_pending(self, lw) -> None:
        if not self.pending:
            return
        status = self.pending_status()
        failed = cmpi("ne", status, const(STATUS, 0))
        if lw.body_depth > 0:
            branch = scf.IfOp(failed)
            with ir.InsertionPoint(branch.then_block):
                memref.StoreOp(status, self.require_flag(lw), [])
                scf.YieldOp([])
            return
        cont = self.region.blocks.append()
        cf.CondBranchOp(failed, [status], [], self.error_block(), cont)
        lw.ip = ir.InsertionPoint(cont)

    # Loop bodies cannot branch to the error block (they are regions of
    # their own): they store their status in a flag created, on first need,
    # just before the outermost loop, and checked right after it.

    def begin_loop(self, anchor: ir.Operation, on_device: bool) -> bool:
        """Called before the outermost loop; False if one is already open."""
        if self._anchor is not None:
            return False
        self._anchor, self._on_device, self.flag = anchor, on_device, None
        return True

    @contextlib.contextmanager
    def loop(self, lw, on_device: bool):
        """Around a loop's lowering: the flag its body raises into is made
        (on first need) before it and checked after it, unless an outer loop
        already holds one."""
        anchor = arith.ConstantOp(ir.IntegerType.get_signless(1), 0).operation
        outermost = self.begin_loop(anchor, on_device)
        yield
        if outermost:
            self.end_loop(lw)

    def end_loop(self, lw) -> None:
        flag, self.flag, self._anchor = self.flag, None, None
        if flag is not None:
            status = memref.LoadOp(flag, []).result
            self.raise_if(lw, cmpi("ne", status, const(STATUS, 0)), status)

    def require_flag(self, lw) -> ir.Value:
        if self.flag is None:
            # Host memory that kernels reach (jit.py's allocator), or a
            # local cell when the whole loop nest runs inside a kernel.
            with ir.InsertionPoint(self._anchor), self._anchor.location:
                cell = ir.MemRefType.get([], status_type())
                op = memref.AllocaOp if self._on_device else memref.AllocOp
                self.flag = op(cell, [], []).result
                memref.StoreOp(const(STATUS, 0), self.flag, [])
        return self.flag

    def finalize(self, result_types: list[ir.Type]) -> None:
        """Fill the error block: return the status and placeholder results."""
        if self.block is None:
            return
        with ir.InsertionPoint(self.block), ir.Location.unknown():
            values = [self.block.arguments[0]]
            for ty in result_types:
                if isinstance(ty, ir.MemRefType):
                    values.append(_empty_memref(ty))
                else:
                    values.append(zero_of(ty))
            func.ReturnOp(values)



def _empty_memref(ty: ir.MemRefType) -> ir.Value:
    """An empty array of type `ty` (allocated with the identity layout, then
    cast when `ty` is strided)."""
    plain = ir.MemRefType.get(ty.shape, ty.element_type)
    empty = memref.AllocOp(plain, [const_index(0)] * ty.rank, []).result
    return empty if plain == ty else memref.CastOp(ty, empty).result
