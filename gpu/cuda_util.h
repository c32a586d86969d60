// Error checking and owned device memory for the CUDA code.
//
// STALLSCOPE_CUDA(call) and STALLSCOPE_CUBLAS(call) throw DeviceError naming the call, the
// error and the source line; DeviceBuffer<T> is a cudaMalloc'd array freed on destruction.
//
// Thread-safety: as the CUDA runtime's (all functions may be called from any thread).
#ifndef STALLSCOPE_GPU_CUDA_UTIL_H_
#define STALLSCOPE_GPU_CUDA_UTIL_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <utility>

#include "pipeline/device.h"

namespace stallscope::gpu {

[[noreturn]] void ThrowCudaError(const char* what, const char* error, const char* file, int line);

inline void CheckCuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) ThrowCudaError(what, cudaGetErrorString(e), file, line);
}
void CheckCublas(cublasStatus_t s, const char* what, const char* file, int line);

#define STALLSCOPE_CUDA(call) ::stallscope::gpu::CheckCuda((call), #call, __FILE__, __LINE__)
#define STALLSCOPE_CUBLAS(call) ::stallscope::gpu::CheckCublas((call), #call, __FILE__, __LINE__)

// Number of CUDA devices usable here (0 with no GPU or no driver; never throws).
int CudaDeviceCount();

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(uint64_t count) : count_(count) {
    if (count) STALLSCOPE_CUDA(cudaMalloc(reinterpret_cast<void**>(&p_), count * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(count_, o.count_);
    return *this;
  }
  T* get() const { return p_; }
  uint64_t size() const { return count_; }

 private:
  T* p_ = nullptr;
  uint64_t count_ = 0;
};

// A CUDA event that times (created and destroyed with the object).
class Event {
 public:
  Event() { STALLSCOPE_CUDA(cudaEventCreate(&e_)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  // Milliseconds from `start` to this event (both complete).
  float MillisecondsSince(const Event& start) const {
    float ms = 0;
    STALLSCOPE_CUDA(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace stallscope::gpu

#endif  // STALLSCOPE_GPU_CUDA_UTIL_H_
