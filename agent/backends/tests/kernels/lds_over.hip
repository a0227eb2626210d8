// A kernel that asks for more LDS than a gfx1151 workgroup has (65792 of 65536 bytes): clang
// refuses it, and the resources gate names the amount (resources_gtest). Compiled as
// pressure.hip is, with no ROCm install.
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))

__global__ void staged(float* o) {
  __shared__ float tile[16448];
  const unsigned t = __builtin_amdgcn_workitem_id_x();
  tile[t] = o[t];
  __builtin_amdgcn_s_barrier();
  o[t] = tile[(t * 7) % 16448];
}
