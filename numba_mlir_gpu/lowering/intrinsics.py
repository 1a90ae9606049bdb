"""Calls of user `@numba.extending.intrinsic` functions on scalars.

An intrinsic's code generator writes LLVM IR with llvmlite's builder
(libraries use them for bit casts and popcounts: pynndescent's
`int32_bits_as_float32`, `popcnt_u8`). We run the generator for the call's
signature into a scratch llvmlite function, with Numba's CPU target context
(which its casts use), and translate its instructions one by one into
arith and math operations, so the call needs no LLVM IR in the MLIR module
and works in kernels too. A generator that writes more than one block, or
an instruction not in the tables below, is an unsupported construct naming
the intrinsic and the instruction.
"""
from __future__ import annotations

from llvmlite import ir as llvm_ir
from numba.core import types
from numba.core.extending import _Intrinsic
from numba.core.registry import cpu_target

from .._mlir import arith, ir, math
from .errors import UnsupportedConstructError

_CASTS = {"bitcast": arith.BitcastOp, "trunc": arith.TruncIOp, "zext": arith.ExtUIOp,
          "sext": arith.ExtSIOp, "fptrunc": arith.TruncFOp, "fpext": arith.ExtFOp,
          "fptosi": arith.FPToSIOp, "fptoui": arith.FPToUIOp, "sitofp": arith.SIToFPOp,
          "uitofp": arith.UIToFPOp}
_BINARY = {"add": arith.AddIOp, "sub": arith.SubIOp, "mul": arith.MulIOp,
           "sdiv": arith.DivSIOp, "udiv": arith.DivUIOp, "srem": arith.RemSIOp,
           "urem": arith.RemUIOp, "and": arith.AndIOp, "or": arith.OrIOp, "xor": arith.XOrIOp,
           "shl": arith.ShLIOp, "lshr": arith.ShRUIOp, "ashr": arith.ShRSIOp,
           "fadd": arith.AddFOp, "fsub": arith.SubFOp, "fmul": arith.MulFOp,
           "fdiv": arith.DivFOp, "frem": arith.RemFOp}
# llvm.NAME.TYPE intrinsics, by NAME
_LLVM_CALLS = {"llvm.ctpop": math.CtPopOp, "llvm.fabs": math.AbsFOp, "llvm.sqrt": math.SqrtOp,
               "llvm.floor": math.FloorOp, "llvm.ceil": math.CeilOp, "llvm.trunc": math.TruncOp,
               "llvm.copysign": math.CopySignOp, "llvm.fma": math.FmaOp}


def is_intrinsic(obj) -> bool:
    return isinstance(obj, _Intrinsic)


def lower_intrinsic_call(lw, intrinsic: _Intrinsic, args: list, sig, expr) -> ir.Value:
    name = getattr(intrinsic, "_name", "an intrinsic")
    if not all(isinstance(t, (types.Integer, types.Float, types.Boolean))
               for t in (*sig.args, sig.return_type)):
        raise UnsupportedConstructError(f"calling the intrinsic {name} on {sig}", expr.loc)
    try:
        function = _generated(intrinsic, sig)
    except Exception as error:    # noqa: BLE001  (a generator written for Numba's own lowering)
        raise UnsupportedConstructError(
            f"calling the intrinsic {name}: its code generator needs Numba's lowering "
            f"({type(error).__name__}: {error})", expr.loc) from None
    if len(function.blocks) != 1:
        raise UnsupportedConstructError(
            f"calling the intrinsic {name}: its code has branches", expr.loc)
    values = dict(zip(function.args, args))
    for instruction in function.blocks[0].instructions:
        if isinstance(instruction, llvm_ir.Ret):
            return _operand(instruction.return_value, values)
        try:
            values[instruction] = _translate(instruction, values)
        except KeyError:
            raise UnsupportedConstructError(
                f"calling the intrinsic {name}: its code has the instruction "
                f"'{instruction.opname}' ({str(instruction).strip()})", expr.loc) from None
    raise UnsupportedConstructError(f"calling the intrinsic {name}: its code returns nothing",
                                    expr.loc)


def _generated(intrinsic: _Intrinsic, sig) -> llvm_ir.Function:
    """The intrinsic's LLVM code for `sig`, as a function of its arguments."""
    context = cpu_target.target_context
    typed, codegen = intrinsic._defn(cpu_target.typing_context, *sig.args)
    fnty = llvm_ir.FunctionType(context.get_value_type(sig.return_type),
                                [context.get_value_type(t) for t in sig.args])
    function = llvm_ir.Function(llvm_ir.Module(), fnty, "intrinsic")
    builder = llvm_ir.IRBuilder(function.append_basic_block())
    builder.ret(codegen(context, builder, typed, list(function.args)))
    return function


def _translate(instruction, values: dict) -> ir.Value:
    """One instruction as arith/math operations; KeyError when it has no
    translation."""
    operands = [_operand(o, values) for o in instruction.operands
                if not isinstance(o, llvm_ir.Function)]
    opname = instruction.opname
    if isinstance(instruction, llvm_ir.CastInstr):
        return _CASTS[opname](_mlir_type(instruction.type), operands[0]).result
    # comparisons: llvmlite's predicate names (slt, uge, olt, une, ...) are arith's
    if isinstance(instruction, llvm_ir.ICMPInstr):
        return arith.CmpIOp(_predicate(arith.CmpIPredicate, instruction.op), *operands).result
    if isinstance(instruction, llvm_ir.FCMPInstr):
        return arith.CmpFOp(_predicate(arith.CmpFPredicate, instruction.op), *operands).result
    if isinstance(instruction, llvm_ir.SelectInstr):
        return arith.SelectOp(*operands).result
    if isinstance(instruction, llvm_ir.CallInstr):
        family = instruction.callee.name.rsplit(".", 1)[0]
        return _LLVM_CALLS[family](*operands).result
    return _BINARY[opname](*operands).result


def _predicate(kind, name: str):
    """arith's enum member: CmpIPredicate.slt, CmpFPredicate.OLT."""
    for spelling in (name, name.upper()):
        if hasattr(kind, spelling):
            return getattr(kind, spelling)
    raise KeyError(name)


def _operand(value, values: dict) -> ir.Value:
    if isinstance(value, llvm_ir.Constant):
        ty = _mlir_type(value.type)
        attr = (ir.FloatAttr.get(ty, value.constant) if isinstance(ty, (ir.F32Type, ir.F64Type))
                else ir.IntegerAttr.get(ty, int(value.constant)))
        return arith.ConstantOp(ty, attr).result
    return values[value]


def _mlir_type(ty) -> ir.Type:
    if isinstance(ty, llvm_ir.IntType):
        return ir.IntegerType.get_signless(ty.width)
    return {llvm_ir.FloatType: ir.F32Type, llvm_ir.DoubleType: ir.F64Type}[type(ty)].get()
