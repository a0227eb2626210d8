// Another process computing on the GPU, for scripts/gpu-exclusive-check.sh: holds a CUDA
// context and keeps one spinning kernel in flight for the given number of seconds.
//   busy_gpu SECONDS [DEVICE]
#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 10;
  if (argc > 2 && cudaSetDevice(std::atoi(argv[2])) != cudaSuccess) return 2;
  if (cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "busy_gpu: no CUDA device\n");
    return 2;
  }
  std::printf("busy_gpu: computing for %.1f s\n", seconds);
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
    spin<<<1, 1>>>(10'000'000);  // a few ms per launch
    if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  }
  return 0;
}
