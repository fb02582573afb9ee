// y = A @ x: lane = row, a loop over K four columns at a time (x through scalar loads)
  s_load_dwordx4 s[8:11], s[0:1], 0x0      // A, x
  s_load_dwordx2 s[12:13], s[0:1], 0x10    // y
  v_lshlrev_b32 v1, 9, v0                  // row * 512 bytes
  v_mov_b32 v2, 0
  s_mov_b32 s14, 0
  s_waitcnt lgkmcnt(0)
.Lk:
  global_load_dwordx4 v[4:7], v1, s[8:9]
  s_load_dwordx4 s[16:19], s[10:11], s14
  s_waitcnt vmcnt(0) lgkmcnt(0)
  v_fmac_f32 v2, s16, v4
  v_fmac_f32 v2, s17, v5
  v_fmac_f32 v2, s18, v6
  v_fmac_f32 v2, s19, v7
  v_add_u32 v1, 16, v1
  s_add_u32 s14, s14, 16
  s_cmp_lt_u32 s14, 512
  s_cbranch_scc1 .Lk
  v_lshlrev_b32 v3, 2, v0
  global_store_dword v3, v2, s[12:13]
