// gfx950: d = (fp4(a) x e8m0(sa)) @ (fp4(bt) x e8m0(sb)).T, one v_mfma_scale_f32_16x16x128_f8f6f4 (cbsz/blgp 4:
// fp4). Lane l holds 32 fp4 codes (16 bytes) of row l%16 at K block l/16, and that block's E8M0 scale in byte 0.
// kernargs: a (0), bt (8), sa (16), sb (24), d (32)
  s_load_dwordx8 s[8:15], s[0:1], 0x0      // a, bt, sa, sb
  s_load_dwordx2 s[16:17], s[0:1], 0x20    // d
  v_and_b32 v1, 15, v0                     // i
  v_lshrrev_b32 v2, 4, v0                  // q
  v_lshlrev_b32 v3, 6, v1                  // row i: 64 bytes
  v_lshl_add_u32 v3, v2, 4, v3             // + 16 q
  v_lshl_add_u32 v26, v1, 2, v2            // scale byte 4 i + q
  v_lshlrev_b32 v27, 8, v2
  v_lshl_add_u32 v27, v1, 2, v27           // d[4 q][i]
  s_waitcnt lgkmcnt(0)
  global_load_dwordx4 v[4:7], v3, s[8:9]
  global_load_dwordx4 v[12:15], v3, s[10:11]
  global_load_ubyte v24, v26, s[12:13]
  global_load_ubyte v25, v26, s[14:15]
  s_waitcnt vmcnt(0)
  v_mfma_scale_f32_16x16x128_f8f6f4 v[20:23], v[4:7], v[12:15], 0, v24, v25 op_sel_hi:[0,0,0] cbsz:4 blgp:4
  s_nop 7
  s_nop 7
  global_store_dword v27, v20, s[16:17]
  global_store_dword v27, v21, s[16:17] offset:64
  global_store_dword v27, v22, s[16:17] offset:128
  global_store_dword v27, v23, s[16:17] offset:192
