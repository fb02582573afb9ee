// Every .amdhsa_* directive of code object v6 for gfx942, each away from its default where the target allows it
// (tests/test_asm_file.py compares the descriptor with llvm-mc-22 -mattr=+sramecc,-xnack).
.amdgcn_target "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"
.amdhsa_code_object_version 6
.text
.globl k
.p2align 8
k:
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel k
  .amdhsa_group_segment_fixed_size 1000
  .amdhsa_private_segment_fixed_size 64
  .amdhsa_kernarg_size 300
  .amdhsa_user_sgpr_count 12
  .amdhsa_user_sgpr_dispatch_ptr 1
  .amdhsa_user_sgpr_queue_ptr 1
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_user_sgpr_dispatch_id 1
  .amdhsa_user_sgpr_private_segment_size 1
  .amdhsa_user_sgpr_kernarg_preload_length 2
  .amdhsa_user_sgpr_kernarg_preload_offset 1
  .amdhsa_uses_dynamic_stack 1
  .amdhsa_enable_private_segment 1
  .amdhsa_system_sgpr_workgroup_id_x 0
  .amdhsa_system_sgpr_workgroup_id_y 1
  .amdhsa_system_sgpr_workgroup_id_z 1
  .amdhsa_system_sgpr_workgroup_info 1
  .amdhsa_system_vgpr_workitem_id 2
  .amdhsa_next_free_vgpr 200
  .amdhsa_next_free_sgpr 40
  .amdhsa_accum_offset 124
  .amdhsa_reserve_vcc 0
  .amdhsa_reserve_xnack_mask 0
  .amdhsa_float_round_mode_32 1
  .amdhsa_float_round_mode_16_64 2
  .amdhsa_float_denorm_mode_32 2
  .amdhsa_float_denorm_mode_16_64 1
  .amdhsa_dx10_clamp 0
  .amdhsa_ieee_mode 0
  .amdhsa_fp16_overflow 1
  .amdhsa_tg_split 1
  .amdhsa_exception_fp_ieee_invalid_op 1
  .amdhsa_exception_fp_denorm_src 0
  .amdhsa_exception_fp_ieee_div_zero 1
  .amdhsa_exception_fp_ieee_overflow 0
  .amdhsa_exception_fp_ieee_underflow 1
  .amdhsa_exception_fp_ieee_inexact 1
  .amdhsa_exception_int_div_zero 1
.end_amdhsa_kernel
