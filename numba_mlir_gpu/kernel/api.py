"""The names a kernel calls: work-item ids, barriers, local and private
arrays, atomics, group operations and warp shuffles.

These are the Python objects a kernel's source refers to. Compiled kernels
never run them: the compiler types and lowers each by identity (the GPU
through the `gpu` dialect, the CPU with work-groups as parallel
iterations). Run by Python, under `kernel_sim`, each forwards to the
simulator's state for the calling work-item, so the same source runs in
plain Python (print, pdb). Called anywhere else, they say where they belong.
"""
from __future__ import annotations

import threading

# Flags of barrier() and mem_fence(), as OpenCL and numba-dpex spell them.
LOCAL_MEM_FENCE = 1
GLOBAL_MEM_FENCE = 2

# The number of consecutive work-items (by flattened local id) that warp
# shuffles exchange values among: an NVIDIA warp.
WARP_SIZE = 32

_current = threading.local()


class OutsideKernelError(RuntimeError):
    """A kernel-only function was called by Python outside `kernel_sim`."""


def simulator_state():
    """The running simulator's state for the calling work-item (set by the
    simulator on each of its work-item threads)."""
    state = getattr(_current, "state", None)
    if state is None:
        raise OutsideKernelError("kernel functions (get_global_id, barrier, local.array, "
                                 "atomic.add, ...) run only inside a kernel launched by "
                                 "@kernel or @kernel_sim")
    return state


def set_simulator_state(state) -> None:
    _current.state = state


def get_global_id(dim: int) -> int:
    """This work-item's index in the launch along `dim` (0, 1 or 2)."""
    return simulator_state().get_global_id(dim)


def get_local_id(dim: int) -> int:
    """This work-item's index in its work-group along `dim`."""
    return simulator_state().get_local_id(dim)


def get_group_id(dim: int) -> int:
    """The index of this work-item's work-group along `dim`."""
    return simulator_state().get_group_id(dim)


def get_global_size(dim: int) -> int:
    """The launch's global size along `dim` (as given, not rounded up)."""
    return simulator_state().get_global_size(dim)


def get_local_size(dim: int) -> int:
    """The work-group size along `dim`."""
    return simulator_state().get_local_size(dim)


def get_num_groups(dim: int) -> int:
    """The number of work-groups along `dim`."""
    return simulator_state().get_num_groups(dim)


def barrier(flags: int = LOCAL_MEM_FENCE | GLOBAL_MEM_FENCE) -> None:
    """Wait until every work-item of the work-group reaches this barrier;
    memory writes before it (local, and global with GLOBAL_MEM_FENCE) are
    then visible to the group."""
    simulator_state().barrier(flags)


def mem_fence(flags: int = LOCAL_MEM_FENCE | GLOBAL_MEM_FENCE) -> None:
    """Order this work-item's memory accesses (no waiting for others)."""
    simulator_state().mem_fence(flags)


class _Namespace:
    """A group of kernel functions reached by attribute (`local.array`)."""
    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"<numba_mlir_gpu.kernel.{self._name}>"


class _Local(_Namespace):
    def array(self, shape, dtype):
        """An array shared by the work-group (GPU shared memory), of a
        constant shape; every work-item of the group gets the same array."""
        return simulator_state().local_array(shape, dtype)


class _Private(_Namespace):
    def array(self, shape, dtype):
        """An array private to the work-item, of a constant shape."""
        return simulator_state().private_array(shape, dtype)


class _Atomic(_Namespace):
    """Atomic read-modify-write of one array element, as numba.cuda's:
    each returns the element's old value. `index` is an int or a tuple."""

    def add(self, array, index, value):
        return simulator_state().atomic("add", array, index, value)

    def sub(self, array, index, value):
        return simulator_state().atomic("sub", array, index, value)

    def min(self, array, index, value):
        return simulator_state().atomic("min", array, index, value)

    def max(self, array, index, value):
        return simulator_state().atomic("max", array, index, value)

    def exchange(self, array, index, value):
        return simulator_state().atomic("exchange", array, index, value)

    exch = exchange   # numba.cuda's name

    def cas(self, array, index, expected, value):
        """Store `value` if the element equals `expected`; returns the old value."""
        return simulator_state().atomic_cas(array, index, expected, value)


class _Group(_Namespace):
    """Collective operations of the work-group; every work-item of the
    group must call them, in the same order. Shuffles work within a warp
    (WARP_SIZE consecutive work-items by flattened local id); the lane read
    must be in the same warp, else the item's own value comes back."""

    def reduce_add(self, value):
        return simulator_state().group_reduce("add", value)

    def reduce_min(self, value):
        return simulator_state().group_reduce("min", value)

    def reduce_max(self, value):
        return simulator_state().group_reduce("max", value)

    def broadcast(self, value, local_id):
        """The value of the work-item whose flattened local id is `local_id`."""
        return simulator_state().group_broadcast(value, local_id)

    def shuffle_idx(self, value, lane):
        return simulator_state().shuffle("idx", value, lane)

    def shuffle_down(self, value, delta):
        return simulator_state().shuffle("down", value, delta)

    def shuffle_up(self, value, delta):
        return simulator_state().shuffle("up", value, delta)

    def shuffle_xor(self, value, mask):
        return simulator_state().shuffle("xor", value, mask)


local = _Local("local")
private = _Private("private")
atomic = _Atomic("atomic")
group = _Group("group")

__all__ = ["get_global_id", "get_local_id", "get_group_id", "get_global_size",
           "get_local_size", "get_num_groups", "barrier", "mem_fence", "local", "private",
           "atomic", "group", "LOCAL_MEM_FENCE", "GLOBAL_MEM_FENCE", "WARP_SIZE",
           "OutsideKernelError"]
