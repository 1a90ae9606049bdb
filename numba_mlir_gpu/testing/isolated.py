"""Work items run each in a process of its own, so that one that
kills its process (an abort inside MLIR or LLVM, a signal) becomes a result
instead of stalling a multiprocessing pool, which waits for a lost task
forever. Used by the differential sweep and the program generator."""
from __future__ import annotations

import time
from typing import Callable, Iterable, Iterator


def run_isolated(fn: Callable, work: Iterable, jobs: int,
                 died: Callable[[object, object], object], start: str = "fork",
                 limit: float | None = None) -> Iterator:
    """`fn(w)` for each w, `jobs` processes at a time, yielded as they finish;
    `died(w, exit_code)` stands for the result of a process that ends
    without one, and `died(w, "timeout")` for one still running after
    `limit` seconds, which is killed (a hang is a result too, not a stalled
    campaign). `start="fork"` needs a parent that has compiled nothing
    (MLIR's and LLVM's threads hold locks a forked child never gets back);
    "spawn" does not, and needs `fn` and the work items picklable."""
    import multiprocessing as mp
    from multiprocessing.connection import wait
    ctx = mp.get_context(start)
    pending, running = list(work), {}
    while pending or running:
        while pending and len(running) < max(jobs, 1):
            w = pending.pop(0)
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(fn, w, writer), daemon=True)
            proc.start()
            writer.close()
            running[reader] = (proc, w, time.monotonic())
        ready = wait(list(running), timeout=_next_deadline(running, limit))
        for reader in ready:
            proc, w, _ = running.pop(reader)
            try:
                result = reader.recv()
            except EOFError:        # the process ended without sending one
                result = _NONE
            reader.close()
            proc.join()
            yield died(w, proc.exitcode) if result is _NONE else result
        for reader in _overdue(running, limit):
            proc, w, _ = running.pop(reader)
            proc.kill()
            proc.join()
            reader.close()
            yield died(w, "timeout")


def _next_deadline(running: dict, limit: float | None) -> float | None:
    if limit is None:
        return None
    oldest = min(started for (_, _, started) in running.values())
    return max(0.0, oldest + limit - time.monotonic())


def _overdue(running: dict, limit: float | None) -> list:
    if limit is None:
        return []
    now = time.monotonic()
    return [r for r, (_, _, started) in running.items() if now - started > limit]


_NONE = object()


def _child(fn, w, conn):
    conn.send(fn(w))
    conn.close()
