// Test kernels for the AMDGPU resources gate, compiled with -nogpulib -nogpuinc so that no ROCm
// install is needed: one capped at 32 VGPRs so that it spills, one with an LDS tile.
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))

template <int N>
__global__ void __attribute__((amdgpu_num_vgpr(32))) pressure(float* out, const float* in) {
  float acc[N];
  unsigned t = __builtin_amdgcn_workitem_id_x();
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = in[t * N + i] * 1.5f;
  float s = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) s += acc[i] * acc[(i * 7) % N];
  out[t] = s;
}
template __global__ void pressure<64>(float*, const float*);

extern "C" __global__ void tile_transpose(float* out, const float* in) {
  __shared__ float tile[64][65];
  unsigned x = __builtin_amdgcn_workitem_id_x(), y = __builtin_amdgcn_workitem_id_y();
  tile[y][x] = in[y * 64 + x];
  __builtin_amdgcn_s_barrier();
  out[x * 64 + y] = tile[x][y];
}
