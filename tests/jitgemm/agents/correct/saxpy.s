// out = alpha * x + y; kernargs: alpha (f32 at 0), x (8), y (16), out (24)
  s_load_dword s16, s[0:1], 0x0
  s_load_dwordx4 s[8:11], s[0:1], 0x8
  s_load_dwordx2 s[12:13], s[0:1], 0x18
  s_lshl_b32 s14, s2, 8
  v_add_u32 v1, s14, v0
  v_lshlrev_b32 v1, 2, v1
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[8:9]
  global_load_dword v3, v1, s[10:11]
  s_waitcnt vmcnt(0)
  v_fmac_f32 v3, s16, v2
  global_store_dword v1, v3, s[12:13]
