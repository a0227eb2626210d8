// Compares the GPU's %globaltimer and an SM's clock64 with the host's CLOCK_MONOTONIC_RAW over
// windows of W seconds: one kernel spins for W s and posts both counters at its start and end
// into mapped host memory; the host stamps its own clock when each post appears.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda_runtime.h>
struct Post { volatile unsigned long long gt, clk; volatile int seq; };
__global__ void spin(Post* p, unsigned long long ns) {
  unsigned long long g0, c0, g, c;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0)); c0 = clock64();
  p[0].gt = g0; p[0].clk = c0; __threadfence_system(); p[0].seq = 1;
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g)); } while (g - g0 < ns);
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g)); c = clock64();
  p[1].gt = g; p[1].clk = c; __threadfence_system(); p[1].seq = 1;
}
static double host_ns() { timespec t; clock_gettime(CLOCK_MONOTONIC_RAW, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(int argc, char** argv) {
  double w = argc > 1 ? atof(argv[1]) : 2.0; int n = argc > 2 ? atoi(argv[2]) : 5;
  Post* p; cudaHostAlloc(&p, 2 * sizeof(Post), cudaHostAllocMapped);
  Post* dp; cudaHostGetDevicePointer(&dp, p, 0);
  for (int i = 0; i < n; ++i) {
    p[0].seq = p[1].seq = 0;
    spin<<<1, 1>>>(dp, (unsigned long long)(w * 1e9));
    while (!p[0].seq) {} double h0 = host_ns();
    while (!p[1].seq) {} double h1 = host_ns();
    cudaDeviceSynchronize();
    double dh = h1 - h0, dg = double(p[1].gt - p[0].gt), dc = double(p[1].clk - p[0].clk);
    time_t now = time(nullptr); char ts[16]; strftime(ts, sizeof ts, "%H:%M:%S", gmtime(&now));
    printf("%s window %.3f s  globaltimer/host %+.1f ppm  sm clock %.2f MHz by host, %.2f MHz by globaltimer\n",
           ts, dh / 1e9, (dg / dh - 1) * 1e6, dc / dh * 1e3, dc / dg * 1e3);
    fflush(stdout);
  }
  return 0;
}
