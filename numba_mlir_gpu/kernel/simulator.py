"""kernel_sim: kernels run by Python, one work-item at a time, with
barriers, group collectives and warp shuffles (for print and pdb).

    @kernel_sim
    def k(a, b): ...
    k[global_size, local_size](a, b)      # or k[global_size](a, b)

Work-groups run one after another. Inside a group every active work-item
(global id below the global size in every dimension) has a thread, but only
one thread runs at a time: a scheduler hands a baton from item to item.
Between two synchronisation points the items run in the order of their
flattened local id (l0 + L0 * (l1 + L1 * l2)), each until it returns or
reaches a barrier, a group collective or a shuffle. When none can run, the
scheduler looks at where they wait:

* a warp (WARP_SIZE consecutive active items by flattened local id) whose
  items all wait at the same shuffle gets its values and goes on;
* a group whose items all wait at the same barrier or collective (the same
  call in the source, reached by the same kind of call) goes on, with the
  collective's value;
* otherwise no item can ever go on (an item returned, or waits at another
  barrier): a KernelDeadlockError names the kernel, the group and who
  waits where. No timeouts: the check is exact and immediate.

A failed atomic.cas lets the other items of the phase run before the item
tries again, so a work-item that waits for another through atomics (a
compare-and-swap lock or flag) does not spin forever. Spinning on a plain
array read never ends: nothing else runs meanwhile.

Work-items that never wait run one after another on the same thread;
threads are made only for items that wait, and reused by later items and
groups. Work-items outside the global size (the rest of a partial last
group) are never made: barriers and collectives count only active items.

Local arrays are one NumPy array per group and local.array call (the n-th
call of each item gives the group's n-th array); they and private arrays
start as garbage (NaN, the largest integer, True), as uninitialised GPU
memory would. NumPy arguments are used in place; GPU arrays (CuPy, or
anything with __cuda_array_interface__, through CuPy) are copied to the
host for the launch and back after it, also when it fails.
"""
from __future__ import annotations

import functools
import operator
import sys
import threading
from collections import deque

import numpy as np

from . import api as _api
from .api import WARP_SIZE, set_simulator_state
from .dispatcher import split_launch

__all__ = ["kernel_sim", "SimulatedKernel", "KernelDeadlockError", "DEFAULT_LOCAL_SIZE",
           "MAX_GROUP_ITEMS"]

# With the local size omitted: min(global size, 256) along dim 0, 1 elsewhere.
DEFAULT_LOCAL_SIZE = 256
# The most work-items of a work-group, as on NVIDIA GPUs.
MAX_GROUP_ITEMS = 1024
# A work-item whose atomic.cas fails this many times in a row (the others
# running in between) waits forever: a KernelDeadlockError.
MAX_FAILED_CAS = 10_000

_ATOMIC_LOCK = threading.Lock()
_HERE = (__file__, _api.__file__)


class KernelDeadlockError(RuntimeError):
    """The work-items of a group (or warp) can never all reach the barrier,
    collective or shuffle some of them wait at."""


class _Abort(BaseException):
    """Unwinds a waiting work-item's thread once its launch has failed."""


# ----------------------------------------------------------------- launch

def kernel_sim(func=None, **options):
    """Decorate a kernel to run in the Python simulator: `@kernel_sim` or
    `@kernel_sim(...)`. Options of the compiled kernel (target, fastmath,
    fp64, ...) are accepted and ignored; they are kept in `.options`."""
    if func is None:
        return lambda f: SimulatedKernel(f, options)
    if not callable(func):
        raise TypeError(f"kernel_sim decorates a function, not {func!r}")
    return SimulatedKernel(func, options)


def _sizes(value, what) -> tuple:
    sizes = (value,) if not isinstance(value, (tuple, list)) else tuple(value)
    if not 1 <= len(sizes) <= 3:
        raise ValueError(f"the {what} size has 1 to 3 dimensions, not {len(sizes)}: {value!r}")
    for s in sizes:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"the {what} size is an int or a tuple of ints, not {value!r}")
        if s < (0 if what == "global" else 1):
            raise ValueError(f"the {what} size must be {'>= 0' if what == 'global' else '>= 1'}: "
                             f"{value!r}")
    return tuple(int(s) for s in sizes)


def launch_sizes(global_size, local_size=None) -> tuple[tuple, tuple]:
    """The (global, local) sizes of a launch, as tuples of the same length;
    the local size chosen when omitted (DEFAULT_LOCAL_SIZE)."""
    gs = _sizes(global_size, "global")
    if local_size is None:
        ls = (max(1, min(gs[0], DEFAULT_LOCAL_SIZE)),) + (1,) * (len(gs) - 1)
    else:
        ls = _sizes(local_size, "local")
        if len(ls) != len(gs):
            raise ValueError(f"the global size {global_size!r} and the local size {local_size!r} "
                             "have different numbers of dimensions")
    if _product(ls) > MAX_GROUP_ITEMS:
        raise ValueError(f"a work-group has at most {MAX_GROUP_ITEMS} work-items, "
                         f"not {_product(ls)} (local size {ls})")
    return gs, ls


def _product(values) -> int:
    return functools.reduce(operator.mul, values, 1)


class SimulatedKernel:
    """A kernel run by the simulator; launch it as `k[global, local](*args)`."""

    def __init__(self, func, options=None):
        self.py_func = func
        self.options = dict(options or {})
        functools.update_wrapper(self, func)

    def __getitem__(self, config):
        gs, ls = launch_sizes(*split_launch(config))
        return functools.partial(self._launch, gs, ls)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"launch the kernel {self.__name__!r} with its sizes: "
                        f"{self.__name__}[global_size, local_size](...) or "
                        f"{self.__name__}[global_size](...)")

    def __repr__(self) -> str:
        return f"<kernel_sim {self.__qualname__}>"

    def _launch(self, gs, ls, *args):
        host_args, copy_back = _host_arguments(args)
        try:
            _Launch(self, gs, ls, host_args).run()
        finally:                      # also after an error: what was written stays, as on a GPU
            for restore in copy_back:
                restore()


def _host_arguments(args) -> tuple[list, list]:
    """NumPy arrays as they are (written in place); GPU arrays (CuPy, or
    anything with __cuda_array_interface__, through CuPy) as host copies,
    with the functions that copy them back."""
    out, back = [], []
    for a in args:
        if not isinstance(a, np.ndarray) and hasattr(type(a), "__cuda_array_interface__"):
            try:
                import cupy
            except ImportError as e:
                raise TypeError(f"kernel_sim copies GPU arrays ({type(a).__name__}) to the host "
                                "through CuPy, which is not installed") from e
            device = cupy.asarray(a)          # a view of any __cuda_array_interface__ object
            host = cupy.asnumpy(device)

            def restore(device=device, host=host):
                device[...] = cupy.asarray(host)
            out.append(host)
            back.append(restore)
        else:
            out.append(a)
    return out, back


# ------------------------------------------------------------ work-items

class _Item:
    """The state of one work-item: what api.py's functions ask for."""
    __slots__ = ("group", "local", "global_id", "flat", "warp", "worker", "local_calls",
                 "waiting", "result", "finished", "failed_cas")

    def __init__(self, group, local, global_id, flat):
        self.group = group
        self.local = local
        self.global_id = global_id
        self.flat = flat
        self.warp = flat // WARP_SIZE
        self.worker = None
        self.local_calls = 0
        self.waiting = None      # the _Wait this item waits at
        self.result = None       # the value its wait gives
        self.finished = False
        self.failed_cas = 0      # failed atomic.cas in a row

    def ids(self) -> str:
        return (f"global id {self.global_id}, local id {self.local}, "
                f"group {self.group.id}")

    # ids and sizes; dimensions beyond the launch's: ids 0, sizes 1
    def _dim(self, dim) -> int:
        if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
            raise TypeError(f"a dimension is an int (0, 1 or 2), not {dim!r}")
        if not 0 <= dim <= 2:
            raise ValueError(f"the dimension must be 0, 1 or 2, not {dim}")
        return int(dim)

    def _of(self, values, dim, beyond) -> int:
        dim = self._dim(dim)
        return values[dim] if dim < len(values) else beyond

    def get_global_id(self, dim):
        return self._of(self.global_id, dim, 0)

    def get_local_id(self, dim):
        return self._of(self.local, dim, 0)

    def get_group_id(self, dim):
        return self._of(self.group.id, dim, 0)

    def get_global_size(self, dim):
        return self._of(self.group.launch.global_size, dim, 1)

    def get_local_size(self, dim):
        return self._of(self.group.launch.local_size, dim, 1)

    def get_num_groups(self, dim):
        return self._of(self.group.launch.num_groups, dim, 1)

    # synchronisation
    def barrier(self, flags=None):
        self._wait("barrier", "group")

    def mem_fence(self, flags=None):
        pass     # one item runs at a time: every write is seen at once

    def group_reduce(self, op, value):
        if op not in _REDUCTIONS:
            raise ValueError(f"no group reduction {op!r} (add, min, max)")
        return self._wait(f"reduce_{op}", "group", value)

    def group_broadcast(self, value, local_id):
        return self._wait("broadcast", "group", (value, local_id))

    def shuffle(self, kind, value, arg):
        if kind not in ("idx", "down", "up", "xor"):
            raise ValueError(f"no shuffle {kind!r} (idx, down, up, xor)")
        return self._wait(f"shuffle_{kind}", "warp", (value, arg))

    def _wait(self, kind, scope, value=None):
        self.waiting = _Wait(kind, scope, _call_site(), value)
        self.group.launch.scheduler.block(self)
        self.waiting = None
        result, self.result = self.result, None
        return result

    # memory
    def local_array(self, shape, dtype):
        shape, dtype = _shape(shape), _dtype(dtype)
        index = self.local_calls
        self.local_calls += 1
        arrays = self.group.local_arrays
        if index == len(arrays):
            arrays.append(_garbage(shape, dtype))
        array = arrays[index]
        if array.shape != shape or array.dtype != dtype:
            raise ValueError(f"local.array call number {index + 1} of this work-item asks for "
                             f"shape {shape} of {dtype}; the same call of an earlier work-item "
                             f"of its group made shape {array.shape} of {array.dtype} (every "
                             "work-item of a group must make the same local arrays in the same "
                             "order)")
        return array

    def private_array(self, shape, dtype):
        return _garbage(_shape(shape), _dtype(dtype))

    # atomics
    def atomic(self, op, array, index, value):
        update = _ATOMICS.get(op)
        if update is None:
            raise ValueError(f"no atomic {op!r} ({', '.join(_ATOMICS)})")
        with _ATOMIC_LOCK:
            old = _element(array, index)
            array[index] = update(old, value)
        return old

    def atomic_cas(self, array, index, expected, value):
        with _ATOMIC_LOCK:
            old = _element(array, index)
            swapped = bool(old == expected)
            if swapped:
                array[index] = value
        if swapped:
            self.failed_cas = 0
        else:
            self.failed_cas += 1
            if self.failed_cas > MAX_FAILED_CAS:
                raise KernelDeadlockError(
                    f"kernel {self.group.launch.kernel.__qualname__!r}: atomic.cas failed "
                    f"{MAX_FAILED_CAS} times in a row in work-item {self.ids()}, with every "
                    "other work-item given its turn in between: it waits for something no "
                    "work-item will do")
            self.group.launch.scheduler.pause(self)
        return old


_REDUCTIONS = {"add": operator.add, "min": min, "max": max}
_ATOMICS = {"add": operator.add, "sub": operator.sub,
            "min": lambda old, v: min(old, v), "max": lambda old, v: max(old, v),
            "exchange": lambda old, v: v}


def _element(array, index):
    if not isinstance(array, np.ndarray):
        raise TypeError(f"atomics update elements of arrays, not of {type(array).__name__}")
    old = array[index]
    if isinstance(old, np.ndarray):
        raise IndexError(f"an atomic index names one element: {index!r} is not a full index "
                         f"of an array of {array.ndim} dimensions")
    return old


def _shape(shape) -> tuple:
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_))
               and d >= 0 for d in dims):
        raise TypeError(f"an array shape is an int or a tuple of ints, not {shape!r}")
    return tuple(int(d) for d in dims)


def _dtype(dtype) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError:
        from numba.core import types
        from numba.np.numpy_support import as_dtype
        if isinstance(dtype, types.Type):
            return as_dtype(dtype)
        raise


def _garbage(shape, dtype) -> np.ndarray:
    """An array of what uninitialised memory is taken to hold: NaN for
    floats, the largest value for integers, True for booleans."""
    if dtype.kind in "fc":
        fill = np.nan
    elif dtype.kind in "iu":
        fill = np.iinfo(dtype).max
    elif dtype.kind == "b":
        fill = True
    else:
        return np.zeros(shape, dtype)
    return np.full(shape, fill, dtype)


def _call_site():
    """(code, instruction, description) of the kernel's call of the api."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename in _HERE:
        frame = frame.f_back
    if frame is None:
        return None, None, "?"
    code = frame.f_code
    return code, frame.f_lasti, f"{code.co_filename}:{frame.f_lineno} (in {code.co_name})"


class _Wait:
    """Where a work-item waits: a barrier, collective or shuffle call."""
    __slots__ = ("kind", "scope", "code", "offset", "where", "value")

    def __init__(self, kind, scope, site, value):
        self.kind, self.scope, self.value = kind, scope, value
        self.code, self.offset, self.where = site

    def key(self):
        return self.kind, self.code, self.offset

    def describe(self) -> str:
        name = self.kind if self.kind == "barrier" else f"group.{self.kind}"
        return f"{name} at {self.where}"


# ----------------------------------------------------------------- groups

class _Group:
    __slots__ = ("launch", "id", "items", "local_arrays")

    def __init__(self, launch, group_id):
        self.launch = launch
        self.id = group_id
        self.local_arrays = []
        gs, ls = launch.global_size, launch.local_size
        items = []
        base = [g * l for g, l in zip(group_id, ls)]
        # the items that exist per dim; a partial group numbers (flattens) only
        # them, as the GPU's smaller block of a partial group does
        extents = [min(l, n - b) for l, n, b in zip(ls, gs, base)]
        for flat, reversed_local in enumerate(np.ndindex(*reversed(extents))):
            local = tuple(reversed(reversed_local))
            items.append(_Item(self, local, tuple(b + i for b, i in zip(base, local)), flat))
        self.items = items


class _Launch:
    def __init__(self, kernel, gs, ls, args):
        self.kernel = kernel
        self.global_size, self.local_size = gs, ls
        self.num_groups = tuple(-(-g // l) for g, l in zip(gs, ls))
        self.args = args
        self.scheduler = _Scheduler(self)

    def groups(self):
        if 0 in self.global_size:
            return
        for reversed_id in np.ndindex(*reversed(self.num_groups)):
            yield _Group(self, tuple(int(i) for i in reversed(reversed_id)))

    def run(self):
        self.scheduler.run()

    def deadlock(self, group, scope_items, warp=None):
        """The error for items of `group` (or of one of its warps) that can
        never all go on."""
        where = f"warp {warp} of group {group.id}" if warp is not None else f"group {group.id}"
        by_site: dict = {}
        for item in scope_items:
            if item.waiting is not None:
                by_site.setdefault(item.waiting.key(), []).append(item)
        sites = sorted(by_site.values(), key=lambda items: items[0].flat)
        first = sites[0]
        parts = [f"{len(items)} wait at {items[0].waiting.describe()}" for items in sites[1:]]
        finished = sum(item.finished for item in scope_items)
        if finished:
            parts.append(f"{finished} returned")
        return KernelDeadlockError(
            f"kernel {self.kernel.__qualname__!r}: {first[0].waiting.describe()} reached by "
            f"{len(first)} of {len(scope_items)} work-items of {where} (the first: "
            f"{first[0].ids()}); " + "; ".join(parts) + ". Every active work-item of a group "
            "must reach each barrier and collective (of a warp, each shuffle) in the same "
            "order.")


class _Worker:
    """A thread that runs work-items; blocked on `go` while idle or while
    its item waits."""
    __slots__ = ("thread", "go", "item")

    def __init__(self, scheduler):
        self.go = threading.Lock()     # a binary semaphore, held while the thread may not run
        self.go.acquire()
        self.item = None
        self.thread = threading.Thread(target=scheduler.worker_main, args=(self,),
                                       name="kernel_sim work-item", daemon=True)
        self.thread.start()


class _Scheduler:
    """One launch's baton: exactly one of its threads runs at a time; the
    one that holds it changes the state below and hands it on by releasing
    another thread's semaphore (its last act before it waits on its own)."""

    def __init__(self, launch):
        self.launch = launch
        self.groups = None
        self.group = None
        self.unstarted = deque()     # items of the group not started yet, in order
        self.ready = deque()         # waiting items free to go on, in order
        self.paused = deque()        # items that let the others go first (failed CAS)
        self.finished = 0            # items of the group that returned
        self.workers = []
        self.idle = []
        self.done = threading.Event()
        self.error = None            # (exception, item or None)
        self.aborted = False

    # the caller's thread
    def run(self):
        self.groups = self.launch.groups()
        if not self._next_group():
            return
        self._start(self.unstarted.popleft())
        try:
            self.done.wait()
        except BaseException:
            self.aborted = True      # the running item stops at its next wait or return
            raise
        for worker in self.workers:  # the idle end; the waiting unwind (aborted), one by one
            worker.item = None
            worker.go.release()
            worker.thread.join()
        if self.error is not None:
            exc, item = self.error
            if item is not None:
                exc.add_note(f"in work-item {item.ids()} of kernel "
                             f"{self.launch.kernel.__qualname__!r} (kernel_sim)")
            raise exc

    def _start(self, item):
        if self.idle:
            worker = self.idle.pop()
        else:
            worker = _Worker(self)
            self.workers.append(worker)
        worker.item = item
        worker.go.release()

    def _next_group(self) -> bool:
        for group in self.groups:
            if group.items:
                self.group = group
                self.finished = 0
                self.unstarted.extend(group.items)
                return True
        return False

    # worker threads
    def worker_main(self, worker):
        kernel = self.launch.kernel.py_func
        args = self.launch.args
        while True:
            worker.go.acquire()
            item = worker.item
            if item is None or self.aborted:
                return
            while item is not None:
                item.worker = worker
                set_simulator_state(item)
                try:
                    result = kernel(*args)
                    if result is not None:
                        raise TypeError(f"a kernel returns None, not {result!r} (kernels "
                                        "write their results into arrays)")
                except _Abort:
                    return
                except BaseException as exc:
                    set_simulator_state(None)
                    self._fail(exc, item)
                    break
                set_simulator_state(None)
                item.finished = True
                self.finished += 1
                try:
                    item = self._after_return(worker)
                except BaseException as exc:     # (a thread that cannot start, ...)
                    self._fail(exc, None)
                    break

    def _after_return(self, worker):
        """The item of `worker` returned: the next item for this thread to
        run, or None once the baton is handed on (the worker is then idle)."""
        if not self.ready and self.unstarted and not self.aborted:
            return self.unstarted.popleft()
        self.idle.append(worker)
        self._hand_on()
        return None

    def block(self, item):
        """`item` (on its thread, with the baton) waits; back when it may go on."""
        self._hand_on()
        item.worker.go.acquire()
        if self.aborted:
            raise _Abort

    def pause(self, item):
        """`item` lets the other runnable items go first (a failed CAS)."""
        if self.ready or self.unstarted or self.paused:
            self.paused.append(item)
            self.block(item)

    def _fail(self, exc, item):
        if self.error is None:
            self.error = (exc, item)
        self.aborted = True
        self.done.set()

    def _hand_on(self):
        """Give the baton to the next runnable item: a waiting one's thread,
        or an idle (or new) thread for an item not started; at the end of a
        phase resolve the waits; at the end of the launch wake the caller."""
        while True:
            if self.aborted:
                self.done.set()
                return
            if self.ready:
                self.ready.popleft().worker.go.release()
                return
            if self.unstarted:
                self._start(self.unstarted.popleft())
                return
            if self.paused:
                self.paused.popleft().worker.go.release()
                return
            try:
                progressed = self._resolve()
            except BaseException as exc:
                self._fail(exc, None)
                return
            if not progressed and not self._next_group():
                self.done.set()
                return

    def _resolve(self) -> bool:
        """End of a phase: let go the warps and the group whose items all
        wait at the same shuffle / barrier / collective. False when the
        group is finished; raises KernelDeadlockError when stuck."""
        group = self.group
        items = group.items
        first = next((i for i in items if i.waiting is not None), None)
        if first is None:
            return False
        warps: dict = {}
        for item in items:
            warps.setdefault(item.warp, []).append(item)
        released = []
        for warp_items in warps.values():
            wait = warp_items[0].waiting
            if (wait is not None and wait.scope == "warp"
                    and all(i.waiting is not None and i.waiting.key() == wait.key()
                            for i in warp_items)):
                _shuffle(warp_items)
                released.extend(warp_items)
        if not released:
            wait = items[0].waiting
            if (wait is not None and wait.scope == "group"
                    and all(i.waiting is not None and i.waiting.key() == wait.key()
                            for i in items)):
                _collective(items, group, self.launch)
                released = items
        if not released:
            if first.waiting.scope == "warp":
                raise self.launch.deadlock(group, warps[first.warp], warp=first.warp)
            raise self.launch.deadlock(group, items)
        for item in released:
            item.waiting = None      # (the item's own call clears it too)
        self.ready.extend(sorted(released, key=lambda i: i.flat))
        return True


def _collective(items, group, launch):
    kind = items[0].waiting.kind
    if kind == "barrier":
        return
    if kind == "broadcast":
        ids = {i.waiting.value[1] for i in items}
        if len(ids) != 1:
            raise ValueError(f"kernel {launch.kernel.__qualname__!r}: group.broadcast reads "
                             f"different work-items in group {group.id}: {sorted(ids)}")
        source = ids.pop()
        by_flat = {i.flat: i for i in items}
        if source not in by_flat:
            raise IndexError(f"kernel {launch.kernel.__qualname__!r}: group.broadcast from "
                             f"local id {source}, which is not an active work-item of group "
                             f"{group.id} (flattened local ids {items[0].flat}.."
                             f"{items[-1].flat})")
        value = by_flat[source].waiting.value[0]
        for item in items:
            item.result = value
        return
    combine = _REDUCTIONS[kind[len("reduce_"):]]
    value = items[0].waiting.value
    for item in items[1:]:
        value = combine(value, item.waiting.value)
    for item in items:
        item.result = value


def _shuffle(warp_items):
    kind = warp_items[0].waiting.kind[len("shuffle_"):]
    by_lane = {i.flat % WARP_SIZE: i for i in warp_items}
    for item in warp_items:
        value, arg = item.waiting.value
        lane = item.flat % WARP_SIZE
        if kind == "idx":
            source = arg
        elif kind == "down":
            source = lane + arg
        elif kind == "up":
            source = lane - arg
        else:
            source = lane ^ arg
        other = by_lane.get(source) if 0 <= source < WARP_SIZE else None
        item.result = value if other is None else other.waiting.value[0]
