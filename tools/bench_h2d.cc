// bench_h2d: the plain host-to-device copy rate a pipeline's H2D stage is measured against.
//
//   bench_h2d [--bytes N] [--repeat R]
//
// Copies N bytes (default 4 MiB, one 256-sample batch of 4 KiB samples as floats) with
// cudaMemcpyAsync from pinned memory, R times (default 200) after warm-up, each timed with
// CUDA events, and prints the median rate for cudaHostAlloc'd memory and for page-aligned
// malloc'd memory pinned with cudaHostRegister (what the pipeline's staging slots are).
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/cuda_util.h"

namespace {

using stallscope::gpu::DeviceBuffer;
using stallscope::gpu::Event;

double MedianRate(void* host, void* device, uint64_t bytes, int repeat, cudaStream_t stream) {
  Event a, b;
  std::vector<double> seconds;
  for (int i = 0; i < repeat + 5; ++i) {
    STALLSCOPE_CUDA(cudaEventRecord(a.get(), stream));
    STALLSCOPE_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
    STALLSCOPE_CUDA(cudaEventRecord(b.get(), stream));
    STALLSCOPE_CUDA(cudaEventSynchronize(b.get()));
    if (i >= 5) seconds.push_back(b.MillisecondsSince(a) / 1000.0);
  }
  std::sort(seconds.begin(), seconds.end());
  return static_cast<double>(bytes) / seconds[seconds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t bytes = 4ULL << 20;
  int repeat = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--bytes" && i + 1 < argc) {
      bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_h2d [--bytes N] [--repeat R]\n");
      return 2;
    }
  }
  if (bytes == 0 || repeat <= 0) {
    std::fprintf(stderr, "bench_h2d: --bytes and --repeat must be positive\n");
    return 2;
  }
  if (stallscope::gpu::CudaDeviceCount() == 0) {
    std::fprintf(stderr, "bench_h2d: no CUDA GPU visible\n");
    return 2;
  }
  try {
    cudaStream_t stream;
    STALLSCOPE_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    DeviceBuffer<std::byte> device(bytes);
    void* pinned = nullptr;
    STALLSCOPE_CUDA(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault));
    std::memset(pinned, 1, bytes);
    const double alloc_rate = MedianRate(pinned, device.get(), bytes, repeat, stream);
    const uint64_t rounded = (bytes + 4095) / 4096 * 4096;
    void* registered = std::aligned_alloc(4096, rounded);
    std::memset(registered, 1, rounded);
    STALLSCOPE_CUDA(cudaHostRegister(registered, rounded, cudaHostRegisterDefault));
    const double register_rate = MedianRate(registered, device.get(), bytes, repeat, stream);
    fmt::print("bytes {} ({:.2f} MiB) | cudaHostAlloc {:.2f} GB/s | cudaHostRegister {:.2f} GB/s\n",
               bytes, bytes / 1048576.0, alloc_rate / 1e9, register_rate / 1e9);
    fmt::print("H2D_PLAIN_BYTES_PER_SECOND {:.0f}\n", std::max(alloc_rate, register_rate));
    cudaHostUnregister(registered);
    std::free(registered);
    cudaFreeHost(pinned);
    cudaStreamDestroy(stream);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_h2d: %s\n", e.what());
    return 1;
  }
  return 0;
}
