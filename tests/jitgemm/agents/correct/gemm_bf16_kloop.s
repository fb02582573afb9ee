// d = a @ bt.T (32x64 bf16 each, d 32x32 f32): one wave, 8 steps of v_mfma_f32_32x32x8_bf16 over K.
// Lane l reads 4 bf16 of row l%32 at K offset 4 (l/32) of each 8-wide step; result register j of lane l is
// d[8 (j/4) + 4 (l/32) + j%4][l%32].
  s_load_dwordx4 s[8:11], s[0:1], 0x0      // a, bt
  s_load_dwordx2 s[12:13], s[0:1], 0x10    // d
  v_and_b32 v1, 31, v0                     // r
  v_lshrrev_b32 v2, 5, v0                  // h
  v_lshlrev_b32 v3, 7, v1                  // row r: 128 bytes
  v_lshl_add_u32 v3, v2, 3, v3             // + 8 h
  v_lshlrev_b32 v8, 2, v1                  // d column r
  v_lshl_add_u32 v8, v2, 9, v8             // + rows 4 h
  .irp j, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
    v_mov_b32 v\j, 0
  .endr
  s_mov_b32 s14, 8
  s_waitcnt lgkmcnt(0)
.Lk:
  global_load_dwordx2 v[4:5], v3, s[8:9]
  global_load_dwordx2 v[6:7], v3, s[10:11]
  v_add_u32 v3, 16, v3
  s_waitcnt vmcnt(0)
  v_mfma_f32_32x32x8_bf16 v[16:31], v[4:5], v[6:7], v[16:31]
  s_sub_u32 s14, s14, 1
  s_cmp_lg_u32 s14, 0
  s_cbranch_scc1 .Lk
  s_nop 7
  s_nop 7
  global_store_dword v8, v16, s[12:13] offset:0
  global_store_dword v8, v17, s[12:13] offset:128
  global_store_dword v8, v18, s[12:13] offset:256
  global_store_dword v8, v19, s[12:13] offset:384
  global_store_dword v8, v20, s[12:13] offset:1024
  global_store_dword v8, v21, s[12:13] offset:1152
  global_store_dword v8, v22, s[12:13] offset:1280
  global_store_dword v8, v23, s[12:13] offset:1408
  global_store_dword v8, v24, s[12:13] offset:2048
  global_store_dword v8, v25, s[12:13] offset:2176
  global_store_dword v8, v26, s[12:13] offset:2304
  global_store_dword v8, v27, s[12:13] offset:2432
  global_store_dword v8, v28, s[12:13] offset:3072
  global_store_dword v8, v29, s[12:13] offset:3200
  global_store_dword v8, v30, s[12:13] offset:3328
  global_store_dword v8, v31, s[12:13] offset:3456
