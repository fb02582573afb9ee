// d = a @ bt.T, one wave, one v_mfma_f32_16x16x16_f16: lane l loads 8 bytes of row l%16 at K offset 8 bytes * (l/16) from a and bt;
// result register j of lane l is d[4 (l/16) + j][l%16]
  s_load_dwordx4 s[8:11], s[0:1], 0x0      // a, bt
  s_load_dwordx2 s[12:13], s[0:1], 0x10    // d
  v_and_b32 v1, 15, v0                     // i = lane % 16
  v_lshrrev_b32 v2, 4, v0                  // q = lane / 16
  v_lshlrev_b32 v3, 5, v1                  // row i: 32 bytes per row
  v_lshl_add_u32 v3, v2, 3, v3             // + 8 q
  v_lshlrev_b32 v12, 8, v2                 // d row 4 q: 256 bytes per 4 rows
  v_lshl_add_u32 v12, v1, 2, v12           // + 4 i
  s_waitcnt lgkmcnt(0)
  global_load_dwordx2 v[4:5], v3, s[8:9]
  global_load_dwordx2 v[6:7], v3, s[10:11]
  s_waitcnt vmcnt(0)
  v_mfma_f32_16x16x16_f16 v[8:11], v[4:5], v[6:7], 0
  s_nop 7
  global_store_dword v12, v8, s[12:13]
  global_store_dword v12, v9, s[12:13] offset:64
  global_store_dword v12, v10, s[12:13] offset:128
  global_store_dword v12, v11, s[12:13] offset:192
