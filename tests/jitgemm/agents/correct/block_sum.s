// out[g] = sum(a[256 g : 256 g + 256]): a tree in LDS (1024 bytes of dynamic LDS), a barrier per level
  s_load_dwordx4 s[8:11], s[0:1], 0x0      // a, out
  s_lshl_b32 s14, s2, 8
  v_add_u32 v1, s14, v0
  v_lshlrev_b32 v1, 2, v1
  v_lshlrev_b32 v4, 2, v0                  // this item's LDS slot
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[8:9]
  s_waitcnt vmcnt(0)
  ds_write_b32 v4, v2
  s_waitcnt lgkmcnt(0)
  s_barrier
  .macro level half, bytes
    v_cmp_gt_u32 vcc, \half, v0
    s_and_saveexec_b64 s[20:21], vcc
    ds_read_b32 v3, v4 offset:\bytes
    s_waitcnt lgkmcnt(0)
    v_add_f32 v2, v2, v3
    ds_write_b32 v4, v2
    s_waitcnt lgkmcnt(0)
    s_mov_b64 exec, s[20:21]
    s_barrier
  .endm
  level 128, 512
  level 64, 256
  level 32, 128
  level 16, 64
  level 8, 32
  level 4, 16
  level 2, 8
  level 1, 4
  v_cmp_eq_u32 vcc, 0, v0
  s_and_saveexec_b64 s[20:21], vcc
  s_lshl_b32 s15, s2, 2
  s_add_u32 s10, s10, s15
  s_addc_u32 s11, s11, 0
  v_mov_b32 v5, 0
  global_store_dword v5, v2, s[10:11]
