// Test kernels for the resources gate: one with enough live values to spill under a register
// cap (compile with -maxrregcount=32), one with a static shared-memory tile and a barrier.
template <int N>
__global__ void pressure(float* out, const float* in) {
  float acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = in[threadIdx.x * N + i] * 1.5f;
  float s = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) s += acc[i] * acc[(i * 7) % N];
  out[threadIdx.x] = s;
}
template __global__ void pressure<64>(float*, const float*);

extern "C" __global__ void tile_transpose(float* out, const float* in) {
  __shared__ float tile[64][65];
  tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * 64 + threadIdx.x];
  __syncthreads();
  out[threadIdx.x * 64 + threadIdx.y] = tile[threadIdx.x][threadIdx.y];
}
