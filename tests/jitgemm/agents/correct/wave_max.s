// out[w] = max over the 64 lanes of wave w: a butterfly through ds_bpermute_b32 over all 64 lanes
  s_load_dwordx4 s[8:11], s[0:1], 0x0      // a, out
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[8:9]
  v_mbcnt_lo_u32_b32 v5, -1, 0
  v_mbcnt_hi_u32_b32 v5, -1, v5            // lane id 0..63
  v_lshlrev_b32 v5, 2, v5
  s_waitcnt vmcnt(0)
  .irp step, 32, 16, 8, 4, 2, 1
    v_xor_b32 v6, \step*4, v5
    ds_bpermute_b32 v7, v6, v2
    s_waitcnt lgkmcnt(0)
    v_max_f32 v2, v2, v7
  .endr
  v_lshrrev_b32 v8, 6, v0                  // wave index in the workgroup
  v_lshlrev_b32 v8, 2, v8
  s_mov_b64 exec, 1
  global_store_dword v8, v2, s[10:11]
