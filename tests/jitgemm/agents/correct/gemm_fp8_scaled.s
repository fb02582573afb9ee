// d = sa * sb * (a @ bt.T) with gfx942's FNUZ fp8: one v_mfma_f32_16x16x32_fp8_fp8, then the two f32 scales.
// kernargs: a (0), bt (8), sa (16), sb (20), d (24)
  s_load_dwordx4 s[8:11], s[0:1], 0x0      // a, bt
  s_load_dwordx2 s[14:15], s[0:1], 0x10    // sa, sb
  s_load_dwordx2 s[12:13], s[0:1], 0x18    // d
  v_and_b32 v1, 15, v0
  v_lshrrev_b32 v2, 4, v0
  v_lshlrev_b32 v3, 5, v1
  v_lshl_add_u32 v3, v2, 3, v3
  v_lshlrev_b32 v12, 8, v2
  v_lshl_add_u32 v12, v1, 2, v12
  s_waitcnt lgkmcnt(0)
  global_load_dwordx2 v[4:5], v3, s[8:9]
  global_load_dwordx2 v[6:7], v3, s[10:11]
  s_waitcnt vmcnt(0)
  v_mfma_f32_16x16x32_fp8_fp8 v[8:11], v[4:5], v[6:7], 0
  s_nop 7
  .irp j, 8, 9, 10, 11
    v_mul_f32 v\j, s14, v\j
    v_mul_f32 v\j, s15, v\j
  .endr
  global_store_dword v12, v8, s[12:13]
  global_store_dword v12, v9, s[12:13] offset:64
  global_store_dword v12, v10, s[12:13] offset:128
  global_store_dword v12, v11, s[12:13] offset:192
