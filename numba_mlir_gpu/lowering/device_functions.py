"""Functions of a user's LLVM bitcode device library, called from kernels.

`numba_mlir_gpu.declare_device("scale", "float32(float32)", link="lib.bc")`
gives an object that compiled code calls like any function: Numba types it as
an ExternalFunction of that signature; here a call becomes `func.call` of a
private declaration, which kernel outlining copies into the GPU module and
the NVVM target resolves by linking the library (`nvvm-attach-target{l=...}`,
GPUOptions.link). Host code has nothing to link it against, so a call there
(outside a prange loop, or on the CPU target) is refused at compile time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from numba.core import sigutils, types
from numba.extending import typeof_impl

from .._mlir import ir, llvm
from .errors import UnsupportedConstructError
from .types import scalar_type


@dataclass(frozen=True)
class DeviceFunction:
    """A function defined in an LLVM bitcode library for NVPTX."""
    name: str
    signature: object        # numba Signature
    link: Optional[str]      # the .bc file that defines it (None: given at build time)

    def __call__(self, *args):
        raise TypeError(f"{self.name} is a GPU device function: call it from compiled code")


class DeviceFunctionType(types.ExternalFunction):
    """Numba's ExternalFunction, carrying the library to link."""

    def __init__(self, fn: DeviceFunction):
        self.device_function = fn
        super().__init__(fn.name, fn.signature)

    @property
    def key(self):
        return (self.symbol, self.sig, self.device_function.link)


def declare_device(name: str, signature: str, link: Optional[str] = None) -> DeviceFunction:
    """Declare `name` (scalar arguments and result, a Numba signature such as
    "float32(float32, int32)") defined in the bitcode file `link` (also
    settable for a whole ahead-of-time build with --link)."""
    args, result = sigutils.normalize_signature(signature)
    for ty in (*args, result):
        if not isinstance(ty, (types.Number, types.Boolean)):
            raise TypeError(f"declare_device({name!r}): only scalar arguments and results, "
                            f"not {ty}")
    return DeviceFunction(name, result(*args), link)


@typeof_impl.register(DeviceFunction)
def _typeof_device_function(fn, c):
    return DeviceFunctionType(fn)


def call_device_function(lw, fnty: DeviceFunctionType, args: list, sig, expr):
    if not (lw.mlower.strategy.gpu and lw.parallel_depth > 0):
        raise UnsupportedConstructError(
            f"calling the GPU device function {fnty.symbol!r} outside a prange loop of the "
            "gpu target (it exists only in kernels)", expr.loc)
    fn = fnty.device_function
    if fn.link is not None:
        lw.mlower.device_libraries.add(fn.link)
    inputs = [scalar_type(t) for t in fn.signature.args]
    result = scalar_type(fn.signature.return_type)
    _declare(lw.mlower.module, fn.name, inputs, result)
    # Numba typed the call against the declared signature: the arguments
    # were read as its types (expressions.lower_call)
    return llvm.CallOp(result, args, [], [], callee=ir.FlatSymbolRefAttr.get(fn.name)).result


def _declare(module: ir.Module, name: str, inputs: list, result: ir.Type) -> None:
    """An llvm.func, not a func.func: convert-gpu-to-nvvm gives external
    func.funcs of a GPU module C-interface names (_mlir_ciface_<name>),
    which the library does not define."""
    if name in ir.SymbolTable(module.operation):
        return
    with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
        signature = ", ".join(str(t) for t in inputs)
        llvm.LLVMFuncOp(name, ir.TypeAttr.get(ir.Type.parse(f"!llvm.func<{result}({signature})>")))
