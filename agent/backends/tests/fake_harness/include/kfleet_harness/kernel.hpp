// A stand-in for kernels/harness in the backend tests: the same include path, a tiny ABI.
#pragma once
extern "C" int fake_launch(float* out, int n);
