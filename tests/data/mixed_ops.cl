__kernel void mix(__global double *a, __global float *b, __global int *c, __global short *h, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  if (i < n) {
    double x = a[i];
    a[i] = __builtin_sqrt(x) * __builtin_fma(x, 2.0, 1.0) / (x + 3.0);
    b[i] = __builtin_floorf(b[i] * 3.5f) + (float)x;
    __atomic_fetch_add(&c[i % 7], i, __ATOMIC_RELAXED);
    c[i] = __builtin_popcount(c[i]) + __builtin_clz(c[i] | 1) + (c[i] >> 3) * (short)n;
    h[i] = (short)(h[i] * 3 + (short)b[i]);
  }
}
