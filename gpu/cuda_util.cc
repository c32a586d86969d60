#include "gpu/cuda_util.h"

#include <fmt/core.h>

namespace stallscope::gpu {

void ThrowCudaError(const char* what, const char* error, const char* file, int line) {
  throw DeviceError(fmt::format("{} failed: {} ({}:{})", what, error, file, line));
}

void CheckCublas(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) ThrowCudaError(what, cublasGetStatusString(s), file, line);
}

int CudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

}  // namespace stallscope::gpu
