"""User `@intrinsic` functions on scalars (lowering/intrinsics.py): their
llvmlite code translated instruction by instruction, in host code and in
prange bodies (kernels on the GPU), with Numba's results; one that
branches is an unsupported construct naming it."""
import numpy as np
import pytest
from llvmlite import ir as llvm_ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

import numba_mlir_gpu
from numba_mlir_gpu import UnsupportedConstructError

from .support import TARGETS, check
from .test_codegen import all_ptx, compile_only


@intrinsic
def bits_as_float32(typingctx, x):
    """pynndescent's int32_bits_as_float32: a cast, then a bit cast."""
    def codegen(context, builder, sig, args):
        value = context.cast(builder, args[0], sig.args[0], types.int32)
        return builder.bitcast(value, llvm_ir.FloatType())
    return types.float32(x), codegen


@intrinsic
def float32_bits(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], llvm_ir.IntType(32))
    return types.int32(x), codegen


@intrinsic
def popcount_u8(typingctx, x):
    def codegen(context, builder, sig, args):
        fnty = llvm_ir.FunctionType(llvm_ir.IntType(8), [llvm_ir.IntType(8)])
        ctpop = cgutils.get_or_insert_function(builder.module, fnty, "llvm.ctpop.i8")
        return builder.call(ctpop, args)
    return types.uint8(types.uint8), codegen


@intrinsic
def clamp_shifted(typingctx, x, limit):
    """Integer arithmetic, a signed comparison, a select, a constant."""
    def codegen(context, builder, sig, args):
        shifted = builder.shl(builder.add(args[0], llvm_ir.Constant(args[0].type, 3)),
                              llvm_ir.Constant(args[0].type, 1))
        below = builder.icmp_signed("<", shifted, args[1])
        return builder.select(below, shifted, args[1])
    return types.int64(types.int64, types.int64), codegen


@intrinsic
def ordered_less(typingctx, a, b):
    def codegen(context, builder, sig, args):
        return builder.fcmp_ordered("<", args[0], args[1])
    return types.boolean(types.float64, types.float64), codegen


@intrinsic
def branching(typingctx, x):
    def codegen(context, builder, sig, args):
        result = cgutils.alloca_once_value(builder, args[0])
        with builder.if_then(builder.icmp_signed("<", args[0], args[0].type(0))):
            builder.store(builder.neg(args[0]), result)
        return builder.load(result)
    return types.int64(types.int64), codegen


def bit_tricks(ids, bits, x):
    n = ids.shape[0]
    as_float = np.empty(n, np.float32)
    back = np.empty(n, np.int32)
    counts = np.empty(n, np.uint8)
    clamped = np.empty(n, np.int64)
    less = np.empty(n, np.bool_)
    for i in prange(n):
        as_float[i] = bits_as_float32(ids[i])
        back[i] = float32_bits(as_float[i])
        counts[i] = popcount_u8(bits[i])
        clamped[i] = clamp_shifted(ids[i], 150)
        less[i] = ordered_less(x[i], 0.5)
    return back, counts, clamped, less     # back: the bits through float32 and back


@intrinsic
def forty_two(typingctx, x):
    """Returns a constant, not an instruction's result."""
    def codegen(context, builder, sig, args):
        return context.get_constant(types.int64, 42)
    return types.int64(x), codegen


def host_code(a, b):
    return (popcount_u8(a) + clamp_shifted(np.int64(b), 40) + float32_bits(np.float32(1.5))
            + forty_two(a))


@pytest.mark.parametrize("target", TARGETS)
def test_intrinsics_in_a_prange_body(target):
    ids = np.arange(-37, 1000, 13, dtype=np.int64)
    bits = (np.arange(ids.shape[0]) * 37 % 256).astype(np.uint8)
    x = np.random.default_rng(5).random(ids.shape[0])
    x[3] = np.nan
    check(bit_tricks, ids, bits, x, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_intrinsics_in_host_code(target):
    check(host_code, np.uint8(0b1011_0110), 17, target=target)


def test_intrinsic_with_branches_is_an_unsupported_construct():
    def f(x):
        return branching(x)
    with pytest.raises(UnsupportedConstructError, match="intrinsic branching: its code has branches"):
        numba_mlir_gpu.njit(target="cpu", fallback=False)(f)(-3)
    assert numba_mlir_gpu.njit(target="cpu", fallback=True)(f)(-3) == 3


def test_popcount_in_a_kernel_is_popc():
    ids = np.arange(64, dtype=np.int64)
    ptx = all_ptx(compile_only(bit_tricks, ids, ids.astype(np.uint8), ids * 0.5))
    assert "popc.b32" in ptx


@intrinsic
def needs_numbas_lowering(typingctx, x):
    def codegen(context, builder, sig, args):
        raise RuntimeError("wants a real module")
    return types.int64(types.int64), codegen


def test_intrinsic_whose_generator_fails_is_an_unsupported_construct():
    def f(x):
        return needs_numbas_lowering(x)
    with pytest.raises(UnsupportedConstructError, match="needs_numbas_lowering: its code generator"):
        numba_mlir_gpu.njit(target="cpu", fallback=False)(f)(3)
