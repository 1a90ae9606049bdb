"""Explicit kernels: one source that runs on NVIDIA GPUs, on the CPU and
in a Python simulator. See docs/user-guide.md, "Kernels".

    api.py        the names a kernel calls (ids, barrier, local, private, atomic, group)
    simulator.py  kernel_sim: kernels run by Python, one work-item at a time (print, pdb)
"""
from .api import (GLOBAL_MEM_FENCE, LOCAL_MEM_FENCE, WARP_SIZE, OutsideKernelError, atomic,
                  barrier, get_global_id, get_global_size, get_group_id, get_local_id,
                  get_local_size, get_num_groups, group, local, mem_fence, private)
from .dispatcher import kernel
from .simulator import kernel_sim

__all__ = ["get_global_id", "get_local_id", "get_group_id", "get_global_size",
           "get_local_size", "get_num_groups", "barrier", "mem_fence", "local", "private",
           "atomic", "group", "LOCAL_MEM_FENCE", "GLOBAL_MEM_FENCE", "WARP_SIZE",
           "OutsideKernelError", "kernel", "kernel_sim"]
