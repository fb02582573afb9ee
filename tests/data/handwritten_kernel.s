// A hand-written kernel: y[i] = x[i] + UNROLL * table[0] (3.0) for i < n, table[0] loaded from .rodata through
// its address computed PC-relatively (s_getpc_b64 + @rel32@lo/@hi relocations), macros from an .include, .rept/.irp/.irpc, .if/.ifdef,
// expressions in operands, data and .amdhsa_* values, an .amdhsa_kernel block and .amdgpu_metadata.
	.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
	.amdhsa_code_object_version 5
	.set WAVE, 64
	.set UNROLL, 3
	.set NVGPR, 1 + 2
	.include "handwritten_macros.inc"

	.text
	.globl	addtab
	.p2align	8
	.type	addtab,@function
addtab:
	s_load_dwordx4 s[4:7], s[0:1], 0x0
	s_load_dword s8, s[0:1], 4 * 4
	s_getpc_b64 s[10:11]
	s_add_u32 s10, s10, .Ltable@rel32@lo+4
	s_addc_u32 s11, s11, .Ltable@rel32@hi+12
	s_load_dword s12, s[10:11], 0x0         ; table[0] (3.0)
	s_mov_b32 s16, .Lend-addtab
	s_waitcnt lgkmcnt(0)
	v_lshl_add_u32 v0, s2, (WAVE == 64) * -6, v0
	v_cmp_gt_u32 vcc, s8, v0
	s_and_saveexec_b64 s[14:15], vcc
	s_cbranch_execz .Ldone
	v_lshlrev_b32 v1, 2, v0
	global_load_dword v2, v1, s[4:5]
	s_waitcnt vmcnt(0) lgkmcnt(0)
	.rept UNROLL
	add_const v2, v2
	.endr
	global_store_dword v1, v2, s[6:7]
.Ldone:
	s_endpgm
.Lend:
	.size	addtab, .Lend-addtab

	.section	.rodata,"a",@progbits
	.p2align	4
.Ltable:
	.long	0x40400000
	.long	.Lend-addtab
	.irp	v, 1, 2
	.long	\v * 16
	.endr
	.irpc	c, 45
	.byte	\c
	.endr
	.ascii	"ab"
.if UNROLL > 2
	.short	7
.else
	.short	9
.endif
.ifdef WAVE
	.byte	1
.endif
	.p2align	6, 0x0
	.amdhsa_kernel addtab
		.amdhsa_group_segment_fixed_size 0
		.amdhsa_kernarg_size 24
		.amdhsa_user_sgpr_count 2
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_system_sgpr_workgroup_id_x 1
		.amdhsa_next_free_vgpr NVGPR
		.amdhsa_next_free_sgpr 17
		.amdhsa_accum_offset (NVGPR + 3) & ~3
		.amdhsa_float_denorm_mode_32 3
	.end_amdhsa_kernel

	.amdgpu_metadata
---
amdhsa.kernels:
  - .name:           addtab
    .symbol:         addtab.kd
    .kernarg_segment_size: 24
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count:     23
    .vgpr_count:     3
    .max_flat_workgroup_size: 64
    .args:
      - { .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .offset: 16, .size: 4, .value_kind: by_value }
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
amdhsa.version:
  - 1
  - 2
...
	.end_amdgpu_metadata
