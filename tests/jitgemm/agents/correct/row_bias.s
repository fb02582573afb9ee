// out[r, c] = a[r, c] + bias[r]; workgroup x: 64 columns, workgroup y (s3): the row
  s_load_dwordx4 s[8:11], s[0:1], 0x0      // a, bias
  s_load_dwordx2 s[12:13], s[0:1], 0x10    // out
  s_lshl_b32 s14, s3, 2                    // row * 4: the bias byte offset
  s_lshl_b32 s15, s2, 6                    // first column of the workgroup
  s_lshl_b32 s16, s3, 8                    // row * 256
  s_add_u32 s15, s15, s16
  v_add_u32 v1, s15, v0
  v_lshlrev_b32 v1, 2, v1
  s_waitcnt lgkmcnt(0)
  s_load_dword s17, s[10:11], s14
  global_load_dword v2, v1, s[8:9]
  s_waitcnt vmcnt(0) lgkmcnt(0)
  v_add_f32 v2, s17, v2
  global_store_dword v1, v2, s[12:13]
