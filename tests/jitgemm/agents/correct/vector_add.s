// c = a + b: one work-item per element (snippet ABI: s[0:1] kernargs, s2 workgroup id x, v0 work-item id)
  s_load_dwordx4 s[8:11], s[0:1], 0x0      // a, b
  s_load_dwordx2 s[12:13], s[0:1], 0x10    // c
  s_lshl_b32 s14, s2, 8                    // first element of the workgroup (256 per workgroup)
  v_add_u32 v1, s14, v0
  v_lshlrev_b32 v1, 2, v1                  // byte offset
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[8:9]
  global_load_dword v3, v1, s[10:11]
  s_waitcnt vmcnt(0)
  v_add_f32 v2, v2, v3
  global_store_dword v1, v2, s[12:13]
