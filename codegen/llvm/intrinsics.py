"""How LLVM spells the AMDGPU intrinsics the GEMM kernel calls, and declarations of them in a module.

What an MFMA computes (shape, dtypes, register footprints) comes from the spec through
`codegen.mfma_catalog`; only the spelling of the matching `llvm.amdgcn.mfma.*` intrinsic and its LLVM
operand types are LLVM's convention and live here (LLVM's IntrinsicsAMDGPU.td; the tests compile every
catalog MFMA through its intrinsic and check that LLVM selected exactly the spec's instruction).
"""

from __future__ import annotations

from jitgemm.codegen.dtypes import DType
from jitgemm.codegen.gemm_ir import IRError
from jitgemm.codegen.mfma_catalog import Mfma
from llvmlite import ir

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()


class _BFloat(ir.types.Type):
    """LLVM's `bfloat`, which llvmlite.ir does not define (the bf16 conversion intrinsics return it)."""

    def _to_string(self) -> str:
        return "bfloat"

    def __eq__(self, other) -> bool:
        return isinstance(other, _BFloat)

    def __hash__(self) -> int:
        return hash("bfloat")


BF16 = _BFloat()
F32 = ir.FloatType()
GLOBAL = 1      # AMDGPU address spaces (AMDGPUUsage "Address Spaces")
LDS = 3
BUFFER_RSRC = 8
PTR_GLOBAL = ir.PointerType(addrspace=GLOBAL)
PTR_LDS = ir.PointerType(addrspace=LDS)
PTR_RSRC = ir.PointerType(addrspace=BUFFER_RSRC)


def scalar_type(dt: DType) -> ir.Type:
    """The LLVM type an element travels in: floats LLVM knows by value, the rest as integers of their width
    (bf16 as i16 and fp8 as i8, which is how the MFMA intrinsics take them)."""
    if dt.name == "fp32":
        return F32
    if dt.name == "fp16":
        return F16
    return ir.IntType(dt.bits)


def mfma_operand_type(dt: DType, regs: int) -> ir.Type:
    """LLVM operand type of an MFMA input holding `regs` 32-bit registers of `dt` elements."""
    count = regs * 32 // dt.bits
    if dt.bits == 8:                          # packed fp8/bf8/int8: i32 or i64, gfx950's 16-byte int8 form <4 x i32>
        return ir.IntType(regs * 32) if regs <= 2 else ir.VectorType(I32, regs)
    if count == 1:
        return scalar_type(dt)
    if dt.name == "bf16" and count == 8:   # gfx950's 8-element forms take bfloat vectors (IntrinsicsAMDGPU.td)
        return ir.VectorType(BF16, count)
    return ir.VectorType(scalar_type(dt), count)


def mfma_acc_type(mfma: Mfma) -> ir.VectorType:
    return ir.VectorType(F32 if mfma.acc.kind == "float" else I32, mfma.acc_regs)


def mfma_intrinsic_name(mfma: Mfma) -> str:
    """LLVM's name for the intrinsic selecting `mfma` (e.g. V_MFMA_F32_32X32X8_BF16 ->
    llvm.amdgcn.mfma.f32.32x32x8bf16.1k)."""
    shape = f"{mfma.m}x{mfma.n}x{mfma.k}"
    acc = "f32" if mfma.acc.kind == "float" else "i32"
    a, b = mfma.a.name, mfma.b.name
    eight = {"fp8": "fp8", "bf8": "bf8", "fp8_e4m3": "fp8", "fp8_e5m2": "bf8"}   # OCP on gfx950, same intrinsics
    if a in eight and b in eight:
        return f"llvm.amdgcn.mfma.{acc}.{shape}.{eight[a]}.{eight[b]}"
    if a != b:
        raise IRError(f"{mfma.name}: LLVM has no mixed {a}x{b} MFMA intrinsic")
    if a == "fp32":
        return f"llvm.amdgcn.mfma.{acc}.{shape}f32"
    if a in ("fp16", "bf16") and mfma.a_regs == 4:   # gfx950's 8-element forms: llvm.amdgcn.mfma.f32.16x16x32.bf16
        return f"llvm.amdgcn.mfma.{acc}.{shape}.{a.replace('fp', 'f')}"
    if a == "fp16":
        return f"llvm.amdgcn.mfma.{acc}.{shape}f16"
    if a == "bf16":   # the CDNA2+ forms taking 4 bf16 per lane carry LLVM's ".1k" suffix
        return f"llvm.amdgcn.mfma.{acc}.{shape}bf16" + (".1k" if mfma.a_regs == 2 else "")
    if a == "int8":   # CDNA3's 8-byte-per-lane forms are spelled with a dot
        return f"llvm.amdgcn.mfma.{acc}.{shape}" + (".i8" if mfma.a_regs >= 2 else "i8")
    raise IRError(f"{mfma.name}: no LLVM MFMA intrinsic spelling for {a}")


def _type_suffix(ty: ir.Type) -> str:
    """LLVM's overload suffix of a type (i32, f32, v4i32, ...)."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_type_suffix(ty.element)}"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.HalfType):
        return "f16"
    if isinstance(ty, _BFloat):
        return "bf16"
    raise IRError(f"no overload suffix for LLVM type {ty}")


class Intrinsics:
    """Declares intrinsics in one module on first use."""

    def __init__(self, module: ir.Module) -> None:
        self.module = module

    def get(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
        return fn

    # --- ids and synchronisation -----------------------------------------------------------------------
    def workitem_id(self, axis: str) -> ir.Function:
        return self.get(f"llvm.amdgcn.workitem.id.{axis}", I32, [])

    def workgroup_id(self, axis: str) -> ir.Function:
        return self.get(f"llvm.amdgcn.workgroup.id.{axis}", I32, [])

    def readfirstlane(self) -> ir.Function:
        return self.get("llvm.amdgcn.readfirstlane.i32", I32, [I32])

    def barrier(self) -> ir.Function:
        return self.get("llvm.amdgcn.s.barrier", ir.VoidType(), [])

    def sched_barrier(self) -> ir.Function:
        """A scheduling fence for LLVM's machine scheduler (mask 0: nothing may cross); no instruction."""
        return self.get("llvm.amdgcn.sched.barrier", ir.VoidType(), [I32])

    # --- buffer resources and accesses -------------------------------------------------------------------
    def make_buffer_rsrc(self) -> ir.Function:
        # (base pointer, stride, num_records, flags = descriptor word 3); num_records is i64 since LLVM 21
        return self.get("llvm.amdgcn.make.buffer.rsrc.p8.p1", PTR_RSRC, [PTR_GLOBAL, I16, I64, I32])

    def buffer_load(self, ty: ir.Type) -> ir.Function:
        """(rsrc, voffset, soffset, aux) -> value; offsets past num_records read 0."""
        return self.get(f"llvm.amdgcn.raw.ptr.buffer.load.{_type_suffix(ty)}", ty, [PTR_RSRC, I32, I32, I32])

    def buffer_store(self, ty: ir.Type) -> ir.Function:
        """(value, rsrc, voffset, soffset, aux); offsets past num_records are dropped."""
        return self.get(f"llvm.amdgcn.raw.ptr.buffer.store.{_type_suffix(ty)}", ir.VoidType(),
                        [ty, PTR_RSRC, I32, I32, I32])

    # --- arithmetic ------------------------------------------------------------------------------------
    def mfma(self, mfma: Mfma) -> ir.Function:
        acc = mfma_acc_type(mfma)
        return self.get(mfma_intrinsic_name(mfma), acc,
                        [mfma_operand_type(mfma.a, mfma.a_regs), mfma_operand_type(mfma.b, mfma.b_regs), acc,
                         I32, I32, I32])

    def mfma_scale(self, m: int, n: int, k: int, a_regs: int, b_regs: int, acc_regs: int) -> ir.Function:
        """gfx950's block-scaled f8f6f4 MFMA: (A <a_regs x i32>, B <b_regs x i32>, C, cbsz, blgp, opsel_a,
        scale_a, opsel_b, scale_b) -> D; overloaded on A's and B's vector types, which follow the formats cbsz and
        blgp select (LLVM 22 IntrinsicsAMDGPU.td, AMDGPUMfmaScaleIntrinsic; opsel picks the scale byte). Two
        constant-0 scale operands fold to the unscaled MFMA, a 0 byte in a register is 2^-127."""
        ta, tb = ir.VectorType(I32, a_regs), ir.VectorType(I32, b_regs)
        acc = ir.VectorType(F32, acc_regs)
        return self.get(f"llvm.amdgcn.mfma.scale.f32.{m}x{n}x{k}.f8f6f4.{_type_suffix(ta)}.{_type_suffix(tb)}", acc,
                        [ta, tb, acc, I32, I32, I32, I32, I32, I32])

    def cvt_scalef32_pk(self, out: str, fmt: str) -> ir.Function:
        """gfx950's scaled up-conversion of two packed narrow values to 16-bit floats (out "bf16" or "f16"):
        fp4: (i32 src, float scale, i32 byte select) -> <2 x out>; fp8/bf8: (i32, float, i1 word select)
        (LLVM 22 IntrinsicsAMDGPU.td, llvm.amdgcn.cvt.scalef32.pk.{bf16,f16}.{fp4,fp8,bf8})."""
        ty = ir.VectorType(BF16 if out == "bf16" else F16, 2)
        sel = I32 if fmt == "fp4" else I1
        return self.get(f"llvm.amdgcn.cvt.scalef32.pk.{out}.{fmt}", ty, [I32, F32, sel])

    def cvt_scalef32_pk32(self, out: str, fmt: str) -> ir.Function:
        """32 packed fp6/bf6 values (6 dwords) to 32 16-bit floats (llvm.amdgcn.cvt.scalef32.pk32.{bf16,f16}.{fp6,
        bf6})."""
        ty = ir.VectorType(BF16 if out == "bf16" else F16, 32)
        return self.get(f"llvm.amdgcn.cvt.scalef32.pk32.{out}.{fmt}", ty, [ir.VectorType(I32, 6), F32])

    def smin(self) -> ir.Function:
        return self.get("llvm.smin.i32", I32, [I32, I32])

    def cttz(self) -> ir.Function:
        """(x, is_zero_poison) -> trailing zeros of x: log2 of a power of two (s_ff1 in the direct generator)."""
        return self.get("llvm.cttz.i32", I32, [I32, I1])

    def exp2(self) -> ir.Function:
        """v_exp_f32 as it is (no denormal scaling, unlike llvm.exp2)."""
        return self.get("llvm.amdgcn.exp2.f32", F32, [F32])

    def rcp(self) -> ir.Function:
        return self.get("llvm.amdgcn.rcp.f32", F32, [F32])

    def arithmetic_fence(self) -> ir.Function:
        """The value as it is; no optimisation may fuse arithmetic across it (LLVM LangRef, llvm.arithmetic.fence)."""
        return self.get("llvm.arithmetic.fence.f32", F32, [F32])

    def fma(self) -> ir.Function:
        return self.get("llvm.fma.f32", F32, [F32, F32, F32])

    def maxnum(self) -> ir.Function:
        return self.get("llvm.maxnum.f32", F32, [F32, F32])

    def smax(self) -> ir.Function:
        return self.get("llvm.smax.i32", I32, [I32, I32])
