"""The process-wide GPU runtime that compiled host code calls.

A small MLIR (LLVM dialect) module over the CUDA driver API, JIT-ed once per
process. Its functions are registered as symbols both for every GPU module's
ExecutionEngine and for Numba's linker (llvmlite), so no compiled code bakes
in a process-local address (that is what lets `cache=True` work).

* One stream per call, never created here: the calling thread's stream
  (`nmg_stream`, set by the dispatcher: runtime/streams.py), which is the
  legacy default stream (NULL) unless the caller runs on another CuPy or
  PyTorch stream or passes one. Kernels, copies, allocations, frees and
  waits all go to it, so they are ordered with the caller's work on that
  stream without any extra synchronisation, and waits are for that stream
  only (never the whole device).
* The device: the one of the calling thread's current context (the
  dispatcher makes the data's device current: runtime/devices.py), else
  device 0's primary context. GPU binaries are loaded into a device's
  context on the first launch there (`mgpuModuleLoad` and
  `mgpuModuleGetFunction` are replaced: a binary is a record of its data and
  one module per device, a kernel one function per device), so one compiled
  function runs on any device of the same architecture.
* `nmg_alloc_device`: stream-ordered device memory from the device's default
  pool (`cuMemAllocAsync`); `nmg_alloc_managed`: CUDA managed memory, for
  arrays host code touches; `nmg_alloc_managed_on_device`: managed memory
  prefetched to the GPU (arrays a kernel fills and the host reads later).
* Managed allocations of at most SMALL_BLOCK bytes (a call's status flag,
  scalars host code reads back) are SMALL_BLOCK-byte blocks that `nmg_free`
  keeps on the calling thread's list (a pthread key) for the thread's next
  call: cuMemAllocManaged, and cuMemFree, which waits for the whole device,
  cost a vectorize call 0.2 ms (Black-Scholes of 2^24 options on an H100
  took 0.52 ms instead of the 0.29 ms of its prange form). A thread's blocks
  are not freed when it ends: a few hundred bytes per thread.
* `nmg_free` frees either kind; `nmg_memcpy` copies between any two pointers
  (unified addressing), in stream order.
* A failed allocation or launch is recorded (`nmg_take_failure`) instead of
  crashing: the failed allocation returns NULL, later launches are skipped
  and the Numba wrapper raises the Python exception. So is a synchronisation
  or copy that fails (`nmg_check`: a kernel faulted), so that its results are
  never returned as if they were right.
"""
from __future__ import annotations

import ctypes
import functools

from .._libs import runtime_library
from .._mlir import ExecutionEngine, ir, new_context, passmanager
from .cuda import require_device
from .streams import STREAM_KEY, make_key

FAILURE_NONE, FAILURE_OUT_OF_MEMORY, FAILURE_LAUNCH, FAILURE_FAULT = 0, 1, 2, 3

# name -> LLVM-dialect signature, as declared by modules that call them
RUNTIME_FUNCTIONS = {
    "nmg_alloc_device": "(i64) -> !llvm.ptr",
    "nmg_alloc_managed": "(i64) -> !llvm.ptr",
    "nmg_alloc_managed_on_device": "(i64) -> !llvm.ptr",
    "nmg_free": "(!llvm.ptr)",
    "nmg_memcpy": "(!llvm.ptr, !llvm.ptr, i64)",
    "nmg_sync": "()",
    "nmg_take_failure": "() -> i32",
    "mgpuLaunchKernel": "(!llvm.ptr, i64, i64, i64, i64, i64, i64, i32, !llvm.ptr, "
                        "!llvm.ptr, !llvm.ptr, i64)",
    "mgpuModuleLoad": "(!llvm.ptr, i64) -> !llvm.ptr",
    "mgpuModuleLoadJIT": "(!llvm.ptr, i32) -> !llvm.ptr",
    "mgpuModuleGetFunction": "(!llvm.ptr, !llvm.ptr) -> !llvm.ptr",
    "mgpuModuleUnload": "(!llvm.ptr)",
}
MAX_DEVICES = 16      # the per-device slots of a loaded binary
SMALL_BLOCK = 256     # managed allocations up to this size are reused per thread
SMALL_BLOCKS_KEY = make_key()   # the calling thread's list of free small blocks

_RUNTIME = """
llvm.func @cuCtxGetCurrent(!llvm.ptr) -> i32
llvm.func @cuCtxSetCurrent(!llvm.ptr) -> i32
llvm.func @cuDevicePrimaryCtxRetain(!llvm.ptr, i32) -> i32
llvm.func @cuMemAllocAsync(!llvm.ptr, i64, !llvm.ptr) -> i32
llvm.func @cuDeviceGetDefaultMemPool(!llvm.ptr, i32) -> i32
llvm.func @cuMemPoolTrimTo(!llvm.ptr, i64) -> i32
llvm.func @cuMemFreeAsync(i64, !llvm.ptr) -> i32
llvm.func @cuMemAllocManaged(!llvm.ptr, i64, i32) -> i32
llvm.func @cuMemFree_v2(i64) -> i32
llvm.func @cuMemPrefetchAsync(i64, i64, i32, !llvm.ptr) -> i32
llvm.func @cuPointerGetAttribute(!llvm.ptr, i32, i64) -> i32
llvm.func @cuStreamSynchronize(!llvm.ptr) -> i32
llvm.func @cuMemcpy(i64, i64, i64) -> i32
llvm.func @cuMemcpyAsync(i64, i64, i64, !llvm.ptr) -> i32
llvm.func @pthread_getspecific(i32) -> !llvm.ptr
llvm.func @pthread_setspecific(i32, !llvm.ptr) -> i32
llvm.func @cuMemGetAddressRange_v2(!llvm.ptr, !llvm.ptr, i64) -> i32
llvm.func @calloc(i64, i64) -> !llvm.ptr
llvm.func @cuCtxGetDevice(!llvm.ptr) -> i32
llvm.func @cuModuleLoadData(!llvm.ptr, !llvm.ptr) -> i32
llvm.func @cuModuleGetFunction(!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
llvm.func @cuFuncSetAttribute(!llvm.ptr, i32, i32) -> i32
llvm.func @cuLaunchKernel(!llvm.ptr, i32, i32, i32, i32, i32, i32, i32, !llvm.ptr,
                          !llvm.ptr, !llvm.ptr) -> i32

llvm.mlir.global internal @nmg_failure(0 : i32) : i32

// The calling thread's stream: the value of its pthread key (runtime/streams.py),
// NULL (the legacy default stream) where the thread never set one.
llvm.func @nmg_stream() -> !llvm.ptr {
  %key = llvm.mlir.constant(@STREAM_KEY@ : i32) : i32
  %s = llvm.call @pthread_getspecific(%key) : (i32) -> !llvm.ptr
  llvm.return %s : !llvm.ptr
}

// The primary context of device 0 (the one CuPy, PyTorch and numba.cuda
// use), made current on this thread if no context is (the dispatcher makes
// another device's current for calls on its data: runtime/devices.py).
llvm.func @nmg_bind_context() {
  %one = llvm.mlir.constant(1 : i64) : i64
  %slot = llvm.alloca %one x !llvm.ptr : (i64) -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  llvm.store %null, %slot : !llvm.ptr, !llvm.ptr
  %0 = llvm.call @cuCtxGetCurrent(%slot) : (!llvm.ptr) -> i32
  %ctx = llvm.load %slot : !llvm.ptr -> !llvm.ptr
  %none = llvm.icmp "eq" %ctx, %null : !llvm.ptr
  llvm.cond_br %none, ^bind, ^done
^bind:
  %dev = llvm.mlir.constant(0 : i32) : i32
  %1 = llvm.call @cuDevicePrimaryCtxRetain(%slot, %dev) : (!llvm.ptr, i32) -> i32
  %primary = llvm.load %slot : !llvm.ptr -> !llvm.ptr
  %2 = llvm.call @cuCtxSetCurrent(%primary) : (!llvm.ptr) -> i32
  llvm.br ^done
^done:
  llvm.return
}

// The device of the current context (bound first: nmg_bind_context).
llvm.func @nmg_current_device() -> i32 {
  llvm.call @nmg_bind_context() : () -> ()
  %one = llvm.mlir.constant(1 : i64) : i64
  %slot = llvm.alloca %one x i32 : (i64) -> !llvm.ptr
  %zero = llvm.mlir.constant(0 : i32) : i32
  llvm.store %zero, %slot : i32, !llvm.ptr
  %0 = llvm.call @cuCtxGetDevice(%slot) : (!llvm.ptr) -> i32
  %dev = llvm.load %slot : !llvm.ptr -> i32
  llvm.return %dev : i32
}

// GPU binaries, loaded per device on first use. The global constructors
// of each engine call mgpuModuleLoad (or ...JIT for PTX) once per binary:
// it only records the data, in a binary record
//   {data, first kernel record, CUmodule of device 0 .. MAX_DEVICES-1}.
// Each launch asks mgpuModuleGetFunction(binary, name) for its kernel:
// a kernel record {binary, name, next, CUfunction of device 0 .. MAX-1},
// found by the name's address (a constant of the engine) or made once.
llvm.func @nmg_binary_record(%data: !llvm.ptr) -> !llvm.ptr {
  %slots = llvm.mlir.constant(@BINARY_SLOTS@ : i64) : i64
  %eight = llvm.mlir.constant(8 : i64) : i64
  %rec = llvm.call @calloc(%slots, %eight) : (i64, i64) -> !llvm.ptr
  llvm.store %data, %rec : !llvm.ptr, !llvm.ptr
  llvm.return %rec : !llvm.ptr
}

llvm.func @mgpuModuleLoad(%data: !llvm.ptr, %size: i64) -> !llvm.ptr {
  %rec = llvm.call @nmg_binary_record(%data) : (!llvm.ptr) -> !llvm.ptr
  llvm.return %rec : !llvm.ptr
}

llvm.func @mgpuModuleLoadJIT(%data: !llvm.ptr, %opt: i32) -> !llvm.ptr {
  %rec = llvm.call @nmg_binary_record(%data) : (!llvm.ptr) -> !llvm.ptr
  llvm.return %rec : !llvm.ptr
}

// Engines are never destroyed (compiler/jit.py): nothing to unload.
llvm.func @mgpuModuleUnload(%binary: !llvm.ptr) {
  llvm.return
}

llvm.func @mgpuModuleGetFunction(%binary: !llvm.ptr, %name: !llvm.ptr) -> !llvm.ptr {
  %null = llvm.mlir.zero : !llvm.ptr
  %head_slot = llvm.getelementptr %binary[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %first = llvm.load %head_slot : !llvm.ptr -> !llvm.ptr
  llvm.br ^look(%first : !llvm.ptr)
^look(%rec: !llvm.ptr):
  %end = llvm.icmp "eq" %rec, %null : !llvm.ptr
  llvm.cond_br %end, ^new, ^compare
^compare:
  %name_slot = llvm.getelementptr %rec[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %other = llvm.load %name_slot : !llvm.ptr -> !llvm.ptr
  %same = llvm.icmp "eq" %other, %name : !llvm.ptr
  llvm.cond_br %same, ^found(%rec : !llvm.ptr), ^next
^next:
  %next_slot = llvm.getelementptr %rec[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %next = llvm.load %next_slot : !llvm.ptr -> !llvm.ptr
  llvm.br ^look(%next : !llvm.ptr)
^new:
  // two threads may both make one: the list then holds both, either serves
  %slots = llvm.mlir.constant(@KERNEL_SLOTS@ : i64) : i64
  %eight = llvm.mlir.constant(8 : i64) : i64
  %made = llvm.call @calloc(%slots, %eight) : (i64, i64) -> !llvm.ptr
  llvm.store %binary, %made : !llvm.ptr, !llvm.ptr
  %made_name = llvm.getelementptr %made[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  llvm.store %name, %made_name : !llvm.ptr, !llvm.ptr
  %made_next = llvm.getelementptr %made[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %head = llvm.load %head_slot : !llvm.ptr -> !llvm.ptr
  llvm.store %head, %made_next : !llvm.ptr, !llvm.ptr
  llvm.store %made, %head_slot : !llvm.ptr, !llvm.ptr
  llvm.br ^found(%made : !llvm.ptr)
^found(%kernel: !llvm.ptr):
  llvm.return %kernel : !llvm.ptr
}

// The CUfunction of a kernel record on the current device: its binary is
// loaded into the device's context on the first launch there. NULL on
// failure, recorded (nmg_check); a device past MAX_DEVICES as a failed launch.
llvm.func @nmg_device_function(%kernel: !llvm.ptr) -> !llvm.ptr {
  %one = llvm.mlir.constant(1 : i64) : i64
  %module_out = llvm.alloca %one x !llvm.ptr : (i64) -> !llvm.ptr
  %function_out = llvm.alloca %one x !llvm.ptr : (i64) -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %zero = llvm.mlir.constant(0 : i32) : i32
  %dev32 = llvm.call @nmg_current_device() : () -> i32
  %dev = llvm.zext %dev32 : i32 to i64
  %limit = llvm.mlir.constant(@MAX_DEVICES@ : i64) : i64
  %in_range = llvm.icmp "ult" %dev, %limit : i64
  llvm.cond_br %in_range, ^lookup, ^too_many
^too_many:
  %launch_failure = llvm.mlir.constant(2 : i32) : i32
  llvm.call @nmg_fail(%launch_failure) : (i32) -> ()
  llvm.br ^done(%null : !llvm.ptr)
^lookup:
  %three = llvm.mlir.constant(3 : i64) : i64
  %function_index = llvm.add %dev, %three : i64
  %function_slot = llvm.getelementptr %kernel[%function_index] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.ptr
  %cached = llvm.load %function_slot : !llvm.ptr -> !llvm.ptr
  %absent = llvm.icmp "eq" %cached, %null : !llvm.ptr
  llvm.cond_br %absent, ^module, ^done(%cached : !llvm.ptr)
^module:
  %binary = llvm.load %kernel : !llvm.ptr -> !llvm.ptr
  %two = llvm.mlir.constant(2 : i64) : i64
  %module_index = llvm.add %dev, %two : i64
  %module_slot = llvm.getelementptr %binary[%module_index] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.ptr
  %loaded = llvm.load %module_slot : !llvm.ptr -> !llvm.ptr
  %unloaded = llvm.icmp "eq" %loaded, %null : !llvm.ptr
  llvm.cond_br %unloaded, ^load, ^get(%loaded : !llvm.ptr)
^load:
  %data = llvm.load %binary : !llvm.ptr -> !llvm.ptr
  %0 = llvm.call @cuModuleLoadData(%module_out, %data) : (!llvm.ptr, !llvm.ptr) -> i32
  // a failure here is most often an earlier kernel's fault, reported by
  // this (synchronous) load: recorded as such, as a synchronisation would
  llvm.call @nmg_check(%0) : (i32) -> ()
  %load_ok = llvm.icmp "eq" %0, %zero : i32
  llvm.cond_br %load_ok, ^store_module, ^done(%null : !llvm.ptr)
^store_module:
  %new_module = llvm.load %module_out : !llvm.ptr -> !llvm.ptr
  llvm.store %new_module, %module_slot : !llvm.ptr, !llvm.ptr
  llvm.br ^get(%new_module : !llvm.ptr)
^get(%mod: !llvm.ptr):
  %name_slot = llvm.getelementptr %kernel[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %name = llvm.load %name_slot : !llvm.ptr -> !llvm.ptr
  %1 = llvm.call @cuModuleGetFunction(%function_out, %mod, %name) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  llvm.call @nmg_check(%1) : (i32) -> ()
  %get_ok = llvm.icmp "eq" %1, %zero : i32
  llvm.cond_br %get_ok, ^store_function, ^done(%null : !llvm.ptr)
^store_function:
  %function = llvm.load %function_out : !llvm.ptr -> !llvm.ptr
  llvm.store %function, %function_slot : !llvm.ptr, !llvm.ptr
  llvm.br ^done(%function : !llvm.ptr)
^done(%result: !llvm.ptr):
  llvm.return %result : !llvm.ptr
}

llvm.func @nmg_fail(%kind: i32) {
  %flag = llvm.mlir.addressof @nmg_failure : !llvm.ptr
  llvm.store %kind, %flag : i32, !llvm.ptr
  llvm.return
}

// A failed synchronisation or copy: a kernel faulted (an address outside
// any allocation), and CUDA's context is unusable from now on. Recorded
// unless an earlier failure is (an allocation that failed before makes the
// copies that use it fail too: the first cause is the one to report).
llvm.func @nmg_check(%status: i32) {
  %zero = llvm.mlir.constant(0 : i32) : i32
  %ok = llvm.icmp "eq" %status, %zero : i32
  llvm.cond_br %ok, ^done, ^failed
^failed:
  %flag = llvm.mlir.addressof @nmg_failure : !llvm.ptr
  %kind = llvm.load %flag : !llvm.ptr -> i32
  %first = llvm.icmp "eq" %kind, %zero : i32
  llvm.cond_br %first, ^record, ^done
^record:
  %faulted = llvm.mlir.constant(3 : i32) : i32
  llvm.store %faulted, %flag : i32, !llvm.ptr
  llvm.br ^done
^done:
  llvm.return
}

llvm.func @nmg_take_failure() -> i32 {
  %flag = llvm.mlir.addressof @nmg_failure : !llvm.ptr
  %kind = llvm.load %flag : !llvm.ptr -> i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  llvm.store %zero, %flag : i32, !llvm.ptr
  llvm.return %kind : i32
}

// status != 0: record the failure and return NULL. Only
// CUDA_ERROR_OUT_OF_MEMORY is out of memory: any other status is an earlier
// kernel's fault, which CUDA reports at the next call, an allocation too.
llvm.func @nmg_result_pointer(%status: i32, %slot: !llvm.ptr) -> !llvm.ptr {
  %zero = llvm.mlir.constant(0 : i32) : i32
  %ok = llvm.icmp "eq" %status, %zero : i32
  llvm.cond_br %ok, ^ok, ^failed
^ok:
  %p = llvm.load %slot : !llvm.ptr -> !llvm.ptr
  llvm.return %p : !llvm.ptr
^failed:
  %cuda_oom = llvm.mlir.constant(2 : i32) : i32
  %is_oom = llvm.icmp "eq" %status, %cuda_oom : i32
  llvm.cond_br %is_oom, ^out_of_memory, ^fault
^out_of_memory:
  %oom = llvm.mlir.constant(1 : i32) : i32
  llvm.call @nmg_fail(%oom) : (i32) -> ()
  llvm.br ^null
^fault:
  llvm.call @nmg_check(%status) : (i32) -> ()
  llvm.br ^null
^null:
  %null = llvm.mlir.zero : !llvm.ptr
  llvm.return %null : !llvm.ptr
}

// The pool keeps freed memory (_keep_pool_memory): before a device
// allocation counts as failed, that memory goes back to the driver and the
// allocation is tried once more; after a failure it goes back too, so a
// refused request leaves nothing reserved for other processes.
llvm.func @nmg_release_pool() {
  %one = llvm.mlir.constant(1 : i64) : i64
  %slot = llvm.alloca %one x !llvm.ptr : (i64) -> !llvm.ptr
  %stream = llvm.call @nmg_stream() : () -> !llvm.ptr
  %0 = llvm.call @cuStreamSynchronize(%stream) : (!llvm.ptr) -> i32
  %dev = llvm.call @nmg_current_device() : () -> i32
  %1 = llvm.call @cuDeviceGetDefaultMemPool(%slot, %dev) : (!llvm.ptr, i32) -> i32
  %pool = llvm.load %slot : !llvm.ptr -> !llvm.ptr
  %keep = llvm.mlir.constant(0 : i64) : i64
  %2 = llvm.call @cuMemPoolTrimTo(%pool, %keep) : (!llvm.ptr, i64) -> i32
  llvm.return
}

llvm.func @nmg_alloc_device(%n: i64) -> !llvm.ptr {
  llvm.call @nmg_bind_context() : () -> ()
  %one = llvm.mlir.constant(1 : i64) : i64
  %size = llvm.intr.umax(%n, %one) : (i64, i64) -> i64
  %slot = llvm.alloca %one x !llvm.ptr : (i64) -> !llvm.ptr
  %stream = llvm.call @nmg_stream() : () -> !llvm.ptr
  %zero = llvm.mlir.constant(0 : i32) : i32
  %first = llvm.call @cuMemAllocAsync(%slot, %size, %stream) : (!llvm.ptr, i64, !llvm.ptr) -> i32
  %ok = llvm.icmp "eq" %first, %zero : i32
  llvm.cond_br %ok, ^done(%first : i32), ^retry
^retry:
  llvm.call @nmg_release_pool() : () -> ()
  %second = llvm.call @cuMemAllocAsync(%slot, %size, %stream) : (!llvm.ptr, i64, !llvm.ptr) -> i32
  %ok2 = llvm.icmp "eq" %second, %zero : i32
  llvm.cond_br %ok2, ^done(%second : i32), ^give_back
^give_back:
  llvm.call @nmg_release_pool() : () -> ()
  llvm.br ^done(%second : i32)
^done(%status: i32):
  %p = llvm.call @nmg_result_pointer(%status, %slot) : (i32, !llvm.ptr) -> !llvm.ptr
  llvm.return %p : !llvm.ptr
}

llvm.func @nmg_alloc_managed(%n: i64) -> !llvm.ptr {
  %small = llvm.mlir.constant(@SMALL_BLOCK@ : i64) : i64
  %fits = llvm.icmp "ule" %n, %small : i64
  llvm.cond_br %fits, ^reuse, ^allocate(%n : i64)
^reuse:
  %key = llvm.mlir.constant(@SMALL_BLOCKS_KEY@ : i32) : i32
  %head = llvm.call @pthread_getspecific(%key) : (i32) -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %empty = llvm.icmp "eq" %head, %null : !llvm.ptr
  llvm.cond_br %empty, ^allocate(%small : i64), ^take
^take:
  %next = llvm.load %head : !llvm.ptr -> !llvm.ptr
  %0 = llvm.call @pthread_setspecific(%key, %next) : (i32, !llvm.ptr) -> i32
  llvm.return %head : !llvm.ptr
^allocate(%wanted: i64):
  llvm.call @nmg_bind_context() : () -> ()
  %one = llvm.mlir.constant(1 : i64) : i64
  %size = llvm.intr.umax(%wanted, %one) : (i64, i64) -> i64
  %slot = llvm.alloca %one x !llvm.ptr : (i64) -> !llvm.ptr
  %global = llvm.mlir.constant(1 : i32) : i32
  %status = llvm.call @cuMemAllocManaged(%slot, %size, %global) : (!llvm.ptr, i64, i32) -> i32
  %p = llvm.call @nmg_result_pointer(%status, %slot) : (i32, !llvm.ptr) -> !llvm.ptr
  llvm.return %p : !llvm.ptr
}

llvm.func @nmg_alloc_managed_on_device(%n: i64) -> !llvm.ptr {
  %p = llvm.call @nmg_alloc_managed(%n) : (i64) -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %failed = llvm.icmp "eq" %p, %null : !llvm.ptr
  llvm.cond_br %failed, ^done, ^prefetch
^prefetch:
  %addr = llvm.ptrtoint %p : !llvm.ptr to i64
  %dev = llvm.call @nmg_current_device() : () -> i32
  %stream = llvm.call @nmg_stream() : () -> !llvm.ptr
  %0 = llvm.call @cuMemPrefetchAsync(%addr, %n, %dev, %stream) : (i64, i64, i32, !llvm.ptr) -> i32
  llvm.br ^done
^done:
  llvm.return %p : !llvm.ptr
}

// Managed memory is freed after the calling thread's stream drains (cuMemFree would not wait
// for kernels still using it); pool memory is freed in stream order.
llvm.func @nmg_free(%p: !llvm.ptr) {
  %null = llvm.mlir.zero : !llvm.ptr
  %isnull = llvm.icmp "eq" %p, %null : !llvm.ptr
  llvm.cond_br %isnull, ^done, ^free
^free:
  llvm.call @nmg_bind_context() : () -> ()
  %one = llvm.mlir.constant(1 : i64) : i64
  %slot = llvm.alloca %one x i32 : (i64) -> !llvm.ptr
  %zero = llvm.mlir.constant(0 : i32) : i32
  llvm.store %zero, %slot : i32, !llvm.ptr
  %addr = llvm.ptrtoint %p : !llvm.ptr to i64
  %is_managed_attr = llvm.mlir.constant(8 : i32) : i32
  %0 = llvm.call @cuPointerGetAttribute(%slot, %is_managed_attr, %addr) : (!llvm.ptr, i32, i64) -> i32
  %managed = llvm.load %slot : !llvm.ptr -> i32
  %is_managed = llvm.icmp "ne" %managed, %zero : i32
  llvm.cond_br %is_managed, ^managed, ^device
^managed:
  %stream = llvm.call @nmg_stream() : () -> !llvm.ptr
  %1 = llvm.call @cuStreamSynchronize(%stream) : (!llvm.ptr) -> i32
  %base = llvm.alloca %one x i64 : (i64) -> !llvm.ptr
  %bytes = llvm.alloca %one x i64 : (i64) -> !llvm.ptr
  %range = llvm.call @cuMemGetAddressRange_v2(%base, %bytes, %addr) : (!llvm.ptr, !llvm.ptr, i64) -> i32
  %size = llvm.load %bytes : !llvm.ptr -> i64
  %small = llvm.mlir.constant(@SMALL_BLOCK@ : i64) : i64
  %known = llvm.icmp "eq" %range, %zero : i32
  %fits = llvm.icmp "ule" %size, %small : i64
  %keep = llvm.and %known, %fits : i1
  llvm.cond_br %keep, ^keep, ^release
^keep:
  // on the thread's list of free small blocks (nmg_alloc_managed)
  %key = llvm.mlir.constant(@SMALL_BLOCKS_KEY@ : i32) : i32
  %head = llvm.call @pthread_getspecific(%key) : (i32) -> !llvm.ptr
  llvm.store %head, %p : !llvm.ptr, !llvm.ptr
  %kept = llvm.call @pthread_setspecific(%key, %p) : (i32, !llvm.ptr) -> i32
  llvm.br ^done
^release:
  %2 = llvm.call @cuMemFree_v2(%addr) : (i64) -> i32
  llvm.br ^done
^device:
  %stream2 = llvm.call @nmg_stream() : () -> !llvm.ptr
  %3 = llvm.call @cuMemFreeAsync(%addr, %stream2) : (i64, !llvm.ptr) -> i32
  llvm.br ^done
^done:
  llvm.return
}

llvm.func @nmg_memcpy(%dst: !llvm.ptr, %src: !llvm.ptr, %n: i64) {
  %zero = llvm.mlir.constant(0 : i64) : i64
  %empty = llvm.icmp "eq" %n, %zero : i64
  llvm.cond_br %empty, ^done, ^copy
^copy:
  llvm.call @nmg_bind_context() : () -> ()
  %d = llvm.ptrtoint %dst : !llvm.ptr to i64
  %s = llvm.ptrtoint %src : !llvm.ptr to i64
  %stream = llvm.call @nmg_stream() : () -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %legacy = llvm.icmp "eq" %stream, %null : !llvm.ptr
  llvm.cond_br %legacy, ^blocking, ^ordered
^blocking:
  %0 = llvm.call @cuMemcpy(%d, %s, %n) : (i64, i64, i64) -> i32
  llvm.call @nmg_check(%0) : (i32) -> ()
  llvm.br ^done
^ordered:
  // on the caller's stream: as cuMemcpy on the legacy one, the call returns
  // once pageable host memory is read (to the device) or written (from it)
  %1 = llvm.call @cuMemcpyAsync(%d, %s, %n, %stream) : (i64, i64, i64, !llvm.ptr) -> i32
  llvm.call @nmg_check(%1) : (i32) -> ()
  llvm.br ^done
^done:
  llvm.return
}

llvm.func @nmg_sync() {
  llvm.call @nmg_bind_context() : () -> ()
  %stream = llvm.call @nmg_stream() : () -> !llvm.ptr
  %0 = llvm.call @cuStreamSynchronize(%stream) : (!llvm.ptr) -> i32
  llvm.call @nmg_check(%0) : (i32) -> ()
  llvm.return
}

// Replaces the MLIR CUDA runtime's launcher (same signature): on the calling
// thread's stream (the host code passes NULL), no context push/pop per launch, launches skipped after a failed allocation or when
// the grid is empty (a loop with no iterations), and a failed launch
// recorded for the wrapper to raise.
llvm.func @mgpuLaunchKernel(%f: !llvm.ptr, %gx: i64, %gy: i64, %gz: i64, %bx: i64, %by: i64,
                            %bz: i64, %smem: i32, %stream: !llvm.ptr, %params: !llvm.ptr,
                            %extra: !llvm.ptr, %count: i64) {
  %flag = llvm.mlir.addressof @nmg_failure : !llvm.ptr
  %failure = llvm.load %flag : !llvm.ptr -> i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %failed = llvm.icmp "ne" %failure, %zero : i32
  %zero64 = llvm.mlir.constant(0 : i64) : i64
  %gxy = llvm.mul %gx, %gy : i64
  %blocks = llvm.mul %gxy, %gz : i64
  %empty = llvm.icmp "eq" %blocks, %zero64 : i64
  %skip = llvm.or %failed, %empty : i1
  llvm.cond_br %skip, ^done, ^launch
^launch:
  // %f is a kernel record (mgpuModuleGetFunction): this device's function
  %fn = llvm.call @nmg_device_function(%f) : (!llvm.ptr) -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %unloadable = llvm.icmp "eq" %fn, %null : !llvm.ptr
  llvm.cond_br %unloadable, ^done, ^loaded      // nmg_device_function recorded why
^loaded:
  %dynamic = llvm.icmp "sgt" %smem, %zero : i32
  llvm.cond_br %dynamic, ^shared, ^go
^shared:
  %max_dynamic_shared = llvm.mlir.constant(8 : i32) : i32
  %0 = llvm.call @cuFuncSetAttribute(%fn, %max_dynamic_shared, %smem) : (!llvm.ptr, i32, i32) -> i32
  llvm.br ^go
^go:
  %gx32 = llvm.trunc %gx : i64 to i32
  %gy32 = llvm.trunc %gy : i64 to i32
  %gz32 = llvm.trunc %gz : i64 to i32
  %bx32 = llvm.trunc %bx : i64 to i32
  %by32 = llvm.trunc %by : i64 to i32
  %bz32 = llvm.trunc %bz : i64 to i32
  %current = llvm.call @nmg_stream() : () -> !llvm.ptr
  %status = llvm.call @cuLaunchKernel(%fn, %gx32, %gy32, %gz32, %bx32, %by32, %bz32, %smem,
      %current, %params, %extra) : (!llvm.ptr, i32, i32, i32, i32, i32, i32, i32, !llvm.ptr,
      !llvm.ptr, !llvm.ptr) -> i32
  %ok = llvm.icmp "eq" %status, %zero : i32
  llvm.cond_br %ok, ^done, ^launch_failed
^launch_failed:
  %kind = llvm.mlir.constant(2 : i32) : i32
  llvm.call @nmg_fail(%kind) : (i32) -> ()
  llvm.br ^done
^done:
  llvm.return
}
"""


def declarations() -> str:
    """LLVM-dialect declarations of the runtime, for modules that call it."""
    # mgpuLaunchKernel is called by the LLVM translation of gpu.launch_func,
    # which declares it itself
    return "\n".join(f"llvm.func @{name}{sig}" for name, sig in RUNTIME_FUNCTIONS.items()
                     if not name.startswith("mgpu"))


_POOL_RELEASE_THRESHOLD = 4     # CU_MEMPOOL_ATTR_RELEASE_THRESHOLD


def _keep_pool_memory(lib: ctypes.CDLL) -> None:
    """Freed pool memory stays with each device's pool (the default pool
    would give it back to the driver at every synchronisation, and the next
    call would map it again)."""
    count = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(count))
    for device in range(count.value):    # a CUdevice is its ordinal (cuDeviceGet)
        pool = ctypes.c_void_p()
        if lib.cuDeviceGetDefaultMemPool(ctypes.byref(pool), device) != 0:
            continue
        threshold = ctypes.c_uint64(2**64 - 1)
        lib.cuMemPoolSetAttribute(pool, _POOL_RELEASE_THRESHOLD, ctypes.byref(threshold))


@functools.lru_cache(maxsize=None)
def runtime_addresses() -> dict[str, int]:
    """JIT the runtime once; its functions' addresses, also registered with
    llvmlite so that Numba-compiled wrappers (fresh or from the cache) link."""
    from llvmlite import binding as ll

    lib = require_device()
    ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
    _keep_pool_memory(lib)
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(runtime_text())
        passmanager.PassManager.parse("builtin.module(reconcile-unrealized-casts)").run(
            module.operation)
        engine = ExecutionEngine(module, opt_level=2,
                                 shared_libs=[runtime_library("mlir_cuda_runtime")])
    _KEEP.append(engine)
    # Never freed, not even at interpreter shutdown: the GPU modules' global
    # destructors call this engine's mgpuModuleUnload whenever their own
    # engines go, which may be after this one in the final collection.
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(engine))
    table = (ctypes.c_uint64 * len(RUNTIME_FUNCTIONS))()
    out = ctypes.c_void_p(ctypes.addressof(table))
    packed = (ctypes.c_void_p * 1)(ctypes.addressof(out))
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup("nmg_addresses"))(packed)
    addresses = dict(zip(RUNTIME_FUNCTIONS, table))
    for name, address in addresses.items():
        ll.add_symbol(name, address)
    return addresses


_KEEP: list = []


def runtime_text() -> str:
    """The runtime module's text for this process (its pthread key)."""
    return (_RUNTIME.replace("@STREAM_KEY@", str(STREAM_KEY))
            .replace("@SMALL_BLOCKS_KEY@", str(SMALL_BLOCKS_KEY))
            .replace("@SMALL_BLOCK@", str(SMALL_BLOCK))
            .replace("@MAX_DEVICES@", str(MAX_DEVICES))
            .replace("@BINARY_SLOTS@", str(2 + MAX_DEVICES))
            .replace("@KERNEL_SLOTS@", str(3 + MAX_DEVICES))) + _address_table()


def _address_table() -> str:
    """`nmg_addresses(uint64 *out)`: the plain addresses of the runtime's
    functions (the engine only looks up packed wrappers)."""
    lines = ["llvm.func @nmg_addresses(%out: !llvm.ptr) {"]
    for i, name in enumerate(RUNTIME_FUNCTIONS):
        lines += [f"  %f{i} = llvm.mlir.addressof @{name} : !llvm.ptr",
                  f"  %a{i} = llvm.ptrtoint %f{i} : !llvm.ptr to i64",
                  f"  %p{i} = llvm.getelementptr %out[{i}] : (!llvm.ptr) -> !llvm.ptr, i64",
                  f"  llvm.store %a{i}, %p{i} : i64, !llvm.ptr"]
    return "\n".join(lines + ["  llvm.return", "}"])


def register_runtime(engine) -> None:
    """Resolve a GPU module's calls of the runtime to this process's copy."""
    for name, address in runtime_addresses().items():
        engine.raw_register_runtime(name, ctypes.c_void_p(address))
