// out = a.T, 64x64 f32: workgroup (x, y) moves tile a[32y:, 32x:] to out[32x:, 32y:] through LDS (stride 33)
  s_load_dwordx4 s[8:11], s[0:1], 0x0      // a, out
  v_and_b32 v1, 31, v0                     // c
  v_lshrrev_b32 v2, 5, v0                  // r0 (rows r0 + 8 i)
  s_lshl_b32 s12, s3, 5                    // 32 y
  s_lshl_b32 s13, s2, 5                    // 32 x
  v_add_u32 v3, s12, v2
  v_lshlrev_b32 v3, 6, v3
  v_add_u32 v3, v3, v1
  v_add_u32 v3, s13, v3
  v_lshlrev_b32 v3, 2, v3                  // &a[32y + r0][32x + c]
  v_add_u32 v4, 0x800, v3
  v_add_u32 v5, 0x1000, v3
  v_add_u32 v6, 0x1800, v3
  v_mul_u32_u24 v7, 33, v2
  v_add_u32 v7, v7, v1
  v_lshlrev_b32 v7, 2, v7                  // tile[r0][c]
  s_waitcnt lgkmcnt(0)
  global_load_dword v10, v3, s[8:9]
  global_load_dword v11, v4, s[8:9]
  global_load_dword v12, v5, s[8:9]
  global_load_dword v13, v6, s[8:9]
  s_waitcnt vmcnt(0)
  ds_write_b32 v7, v10
  ds_write_b32 v7, v11 offset:1056
  ds_write_b32 v7, v12 offset:2112
  ds_write_b32 v7, v13 offset:3168
  s_waitcnt lgkmcnt(0)
  s_barrier
  v_mul_u32_u24 v8, 33, v1
  v_add_u32 v8, v8, v2
  v_lshlrev_b32 v8, 2, v8                  // tile[c][r0]
  ds_read_b32 v10, v8
  ds_read_b32 v11, v8 offset:32
  ds_read_b32 v12, v8 offset:64
  ds_read_b32 v13, v8 offset:96
  v_add_u32 v3, s13, v2
  v_lshlrev_b32 v3, 6, v3
  v_add_u32 v3, v3, v1
  v_add_u32 v3, s12, v3
  v_lshlrev_b32 v3, 2, v3                  // &out[32x + r0][32y + c]
  v_add_u32 v4, 0x800, v3
  v_add_u32 v5, 0x1000, v3
  v_add_u32 v6, 0x1800, v3
  s_waitcnt lgkmcnt(0)
  global_store_dword v3, v10, s[10:11]
  global_store_dword v4, v11, s[10:11]
  global_store_dword v5, v12, s[10:11]
  global_store_dword v6, v13, s[10:11]
