// What the GPU tests share (cuda_device_test's sources).
#ifndef STALLSCOPE_GPU_GPU_TEST_UTIL_H_
#define STALLSCOPE_GPU_GPU_TEST_UTIL_H_

#include <gtest/gtest.h>

#include "gpu/cuda_util.h"

// Skips the test where no CUDA GPU is visible (CI, the development machine).
#define REQUIRE_GPU() \
  if (::stallscope::gpu::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA GPU visible"

#endif  // STALLSCOPE_GPU_GPU_TEST_UTIL_H_
