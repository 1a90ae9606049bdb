"""float64 arithmetic run as float32 in GPU kernels (`fp64="truncate"`).

Consumer and some data-centre GPUs run float64 at 1/32 to 1/64 of the float32
rate. With truncation, a kernel's float64 values are float32 registers:
arithmetic, comparisons, math functions (libdevice's float32 ones) and values
carried through loops; float64 arrays keep their storage type, each element
converted on load (round to nearest) and on store (exact). Scalars the host
passes in are converted at the kernel's entry. Host code is untouched.

Runs on the outlined GPU modules, before NVVM conversion, by retyping
values in place (MLIR has no pass for this): each f64 result becomes f32
except where a type is tied to memory, which gets a conversion instead.
"""
from __future__ import annotations

from .._mlir import arith, ir
from ..lowering.errors import UnsupportedConstructError

FP64_MODES = ("native", "truncate", "auto")
# the CUDA device attribute SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO; "auto"
# truncates where float64 runs at less than 1/8 of float32's rate
AUTO_BELOW_RATE = 8

# ops whose f64 operands or results are memory's element type, kept as f64
_MEMORY = {"memref.load", "memref.store", "memref.atomic_rmw", "memref.generic_atomic_rmw",
           "affine.load", "affine.store"}


def truncate_fp64(module: ir.Module) -> None:
    """Every GPU module of `module`, its float64 arithmetic as float32."""
    for op in module.body.operations:
        if op.operation.name == "gpu.module":
            _Truncation().run(op.operation)


class _Truncation:
    def __init__(self):
        self.f64 = ir.F64Type.get()
        self.f32 = ir.F32Type.get()

    def run(self, gpu_module: ir.Operation) -> None:
        for fn in list(gpu_module.regions[0].blocks[0].operations):
            fn = fn.operation
            if fn.name not in ("gpu.func", "func.func") or not fn.regions[0].blocks:
                continue
            self._refuse_complex(fn)
            if fn.name == "func.func":
                self._retype_signature(fn)
            # a kernel's parameters come from the host as float64
            self._walk(fn.regions[0], float64_entry=fn.name == "gpu.func")

    def _refuse_complex(self, fn: ir.Operation) -> None:
        if "complex<f64>" in str(fn):
            raise UnsupportedConstructError(
                "complex128 values in GPU kernels with fp64='truncate' (use complex64, or "
                "fp64='native')")

    def _retype_signature(self, fn: ir.Operation) -> None:
        fty = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)

        def narrowed(types_):
            return [self.f32 if t == self.f64 else t for t in types_]
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(narrowed(fty.inputs), narrowed(fty.results)))

    def _walk(self, region: ir.Region, float64_entry: bool = False) -> None:
        """`float64_entry`: the entry block's arguments keep float64 (given
        from outside) and are narrowed at its start."""
        for index, block in enumerate(region.blocks):
            for arg in block.arguments:
                if arg.type != self.f64:
                    continue
                if float64_entry and index == 0:
                    self._truncate_after(arg, ir.InsertionPoint.at_block_begin(block))
                else:
                    arg.set_type(self.f32)
            for op in list(block.operations):
                self._op(op.operation)

    def _op(self, op: ir.Operation) -> None:
        name = op.name
        # a generic atomic update's block argument is the element in memory
        for region in op.regions:
            self._walk(region, float64_entry=name == "memref.generic_atomic_rmw")
        if name == "arith.constant" and op.results[0].type == self.f64:
            value = ir.FloatAttr(op.attributes["value"]).value
            with ir.InsertionPoint(op), op.location:
                new = arith.ConstantOp(self.f32, ir.FloatAttr.get(self.f32, value)).result
            op.results[0].replace_all_uses_with(new)
            op.erase()
            return
        if name == "arith.extf" and op.results[0].type == self.f64:
            if op.operands[0].type == self.f32:
                op.results[0].replace_all_uses_with(op.operands[0])
                op.erase()
            else:                                  # f16 -> f64: to f32 instead
                op.results[0].set_type(self.f32)
            return
        if name == "arith.truncf" and op.operands[0].type == self.f32 and \
                op.results[0].type == self.f32:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
            return
        if name == "memref.atomic_yield" and op.operands[0].type == self.f32 and \
                op.parent.results[0].type == self.f64:
            with ir.InsertionPoint(op), op.location:
                op.operands[0] = arith.ExtFOp(self.f64, op.operands[0]).result
            return
        if name in _MEMORY or name.endswith(".bitcast"):
            self._keep_f64(op)
            return
        if name == "llvm.call_intrinsic":
            callee = ir.StringAttr(op.attributes["intrin"]).value
            if callee.endswith(".f64"):
                op.attributes["intrin"] = ir.StringAttr.get(callee[:-4] + ".f32")
        for result in op.results:
            if result.type == self.f64:
                result.set_type(self.f32)

    def _keep_f64(self, op: ir.Operation) -> None:
        """An op tied to float64 memory (or bits): its f32 operands widened
        before it, its f64 results narrowed after it."""
        for i, operand in enumerate(op.operands):
            if operand.type == self.f32 and self._wants_f64(op, i):
                with ir.InsertionPoint(op), op.location:
                    op.operands[i] = arith.ExtFOp(self.f64, operand).result
        for result in op.results:
            if result.type == self.f64:
                self._truncate_after(result, ir.InsertionPoint.after(op))

    def _wants_f64(self, op: ir.Operation, i: int) -> bool:
        """Was operand `i` float64 before the retyping? For memory ops: the
        stored value of a float64 memref; for bitcasts: a 64-bit input."""
        if op.name.endswith("bitcast"):
            result = op.results[0].type
            return isinstance(result, ir.IntegerType) and result.width == 64
        memrefs = [o.type for o in op.operands if isinstance(o.type, ir.MemRefType)]
        return bool(memrefs) and memrefs[0].element_type == self.f64 and \
            op.operands[i].type == self.f32

    def _truncate_after(self, value: ir.Value, point: ir.InsertionPoint) -> None:
        with point, ir.Location.unknown():
            narrow = arith.TruncFOp(self.f32, value)
        value.replace_all_uses_except(narrow.result, narrow.operation)

