// The MLP training step (gpu/mlp_model.h) on a GPU: the own GEMMs against cuBLAS, graphs
// against launched steps, data-parallel updates. Part of cuda_device_test; skips without a GPU.
#include "gpu/mlp_model.h"

#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/gpu_test_util.h"
#include "gpu/kernels/gemm.h"
#include "gpu/kernels/training.h"

namespace stallscope::gpu {
namespace {

// The own-GEMM path on rung 6 (transposes + the fp32 ladder kernel) trains exactly like cuBLAS.
TEST(MlpModel, OwnGemmMatchesCublas) {
  REQUIRE_GPU();
  cublasHandle_t h;
  STALLSCOPE_CUBLAS(cublasCreate(&h));
  const MlpShape shape{128, 256, 256, 3, 10};
  std::vector<float> losses[2];
  for (int own = 0; own < 2; ++own) {
    MlpModel m(shape, own == 1, h, nullptr, 5, OwnRungs::kFp32);
    for (int i = 0; i < 5; ++i) m.EnqueueSyntheticStep(i);
    losses[own] = m.Losses(5);
  }
  cublasDestroy(h);
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(losses[0][i], losses[1][i], 1e-3 * std::abs(losses[0][i])) << "step " << i;
  }
  EXPECT_LT(losses[0][4], losses[0][0]);  // memorizing one batch: the loss falls
}

// The own path on rung 9 (bf16 operands, Hopper): every shape of a model whose dimensions fit
// it runs there, validated against rung 6 on the model's own buffers (the error is the bf16
// rounding: above fp32's, under the ladder's bound); the model trains as cuBLAS's does within
// bf16's precision. Picking the fastest, each shape takes the rung that timed faster.
TEST(MlpModel, OwnGemmOnRungNineTrainsAsCublas) {
  REQUIRE_GPU();
  if (!GemmKernelRunsHere(GemmKernel::kTmaWgmmaBf16)) GTEST_SKIP() << "not a Hopper GPU";
  cublasHandle_t h;
  STALLSCOPE_CUBLAS(cublasCreate(&h));
  const MlpShape shape{256, 512, 512, 3, 256};
  std::vector<float> losses[2];
  for (int own = 0; own < 2; ++own) {
    MlpModel m(shape, own == 1, h, nullptr, 5, OwnRungs::kBf16);
    if (own) {
      ASSERT_EQ(m.own_gemms().size(), 6u);  // 512→512→512→256: 2 forward, 2 dW, 2 dA shapes
      for (const OwnGemmChoice& g : m.own_gemms()) {
        EXPECT_EQ(g.kernel, GemmKernel::kTmaWgmmaBf16) << g.m << "x" << g.n << "x" << g.k;
        EXPECT_GT(g.bf16_error, 1e-4) << "bf16 rounding must show";
        EXPECT_LT(g.bf16_error, 1e-2);
      }
    }
    for (int i = 0; i < 5; ++i) m.EnqueueSyntheticStep(i);
    losses[own] = m.Losses(5);
  }
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(losses[1][i], losses[0][i], 2e-2 * std::abs(losses[0][i])) << "step " << i;
  }
  EXPECT_LT(losses[1][4], losses[1][0]);
  MlpModel fastest(shape, true, h, nullptr, 5);
  for (const OwnGemmChoice& g : fastest.own_gemms()) {
    EXPECT_GT(g.fp32_ms, 0);
    EXPECT_GT(g.bf16_ms, 0);
    EXPECT_EQ(g.kernel == GemmKernel::kTmaWgmmaBf16, g.bf16_ms <= g.fp32_ms);
  }
  cublasDestroy(h);
}

// gpu.graph: a step replayed from its captured graph trains as one launched kernel by kernel
// (the same kernels on the same data, in the same order), for cuBLAS and the own GEMMs; one
// graph per input buffer is captured, then only replayed. The two buffers hold different
// data: a replay that read the wrong buffer would train differently.
TEST(MlpModel, GraphStepsTrainAsLaunchedSteps) {
  REQUIRE_GPU();
  cublasHandle_t h;
  STALLSCOPE_CUBLAS(cublasCreate(&h));
  cudaStream_t stream;
  STALLSCOPE_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  STALLSCOPE_CUBLAS(cublasSetStream(h, stream));
  const MlpShape shape{128, 256, 256, 3, 10};
  // Two staged input buffers of float rows and their labels, as the device's double buffer.
  std::vector<DeviceBuffer<float>> inputs;
  std::vector<DeviceBuffer<uint32_t>> labels;
  for (int i = 0; i < 2; ++i) {
    std::vector<float> rows(128 * 256);
    std::vector<uint32_t> l(128);
    for (size_t k = 0; k < rows.size(); ++k) rows[k] = static_cast<float>((k * 7 + i) % 13) / 13;
    for (size_t k = 0; k < l.size(); ++k) l[k] = static_cast<uint32_t>((k + i) % 10);
    inputs.emplace_back(rows.size());
    labels.emplace_back(l.size());
    STALLSCOPE_CUDA(
        cudaMemcpy(inputs.back().get(), rows.data(), rows.size() * 4, cudaMemcpyHostToDevice));
    STALLSCOPE_CUDA(
        cudaMemcpy(labels.back().get(), l.data(), l.size() * 4, cudaMemcpyHostToDevice));
  }
  for (int own = 0; own < 2; ++own) {
    std::vector<float> losses[2];
    uint64_t captured[2] = {0, 0};
    for (int graph = 0; graph < 2; ++graph) {
      // (own: rung 9 wherever it fits, so its bf16 conversions are in the graph too)
      MlpModel m(shape, own == 1, h, stream, 5, OwnRungs::kBf16);
      m.UseGraphs(graph == 1);
      for (int i = 0; i < 8; ++i) {
        m.EnqueueStep(inputs[i % 2].get(), true, {}, 256 * 4, 128, labels[i % 2].get(), i);
      }
      losses[graph] = m.Losses(8);
      captured[graph] = m.graphs_captured();
    }
    EXPECT_EQ(captured[0], 0u);
    EXPECT_EQ(captured[1], 2u) << "one graph per input buffer";
    for (int i = 0; i < 8; ++i) {
      // (the loss is summed with atomics: equal up to the order of a float sum)
      EXPECT_NEAR(losses[0][i], losses[1][i], 1e-5 * std::abs(losses[0][i]))
          << (own ? "own" : "cublas") << " step " << i;
    }
    EXPECT_LT(losses[1][7], losses[1][0]);  // it trains
  }
  cublasDestroy(h);
  cudaStreamDestroy(stream);
}

// Data-parallel training applies the mean of the replicas' summed gradients: with a reducer
// that sums two identical replicas (doubles the gradients in place), the model trains exactly
// as one replica does; a reducer that forgets to sum (halving the step) does not.
TEST(MlpModel, DataParallelUpdateIsTheMeanOfTheSummedGradients) {
  REQUIRE_GPU();
  cublasHandle_t h;
  STALLSCOPE_CUBLAS(cublasCreate(&h));
  const MlpShape shape{128, 256, 256, 3, 10};
  auto train = [&](int mode) {  // 0: one replica; 1: two, summed; 2: two, not summed
    MlpModel m(shape, false, h, nullptr, 5);
    uint64_t reduced = 0;
    if (mode > 0) {
      m.ReduceGradients(
          [&, mode](float* g, uint64_t n, cudaStream_t stream) {
            reduced += n;
            // g -= (-1) × g: the sum of two identical replicas' gradients.
            if (mode == 1) STALLSCOPE_CUDA(SgdUpdate(g, g, static_cast<int64_t>(n), -1.0f, stream));
          },
          2);
    }
    for (int i = 0; i < 5; ++i) m.EnqueueSyntheticStep(i);
    if (mode > 0) EXPECT_EQ(reduced, 5 * m.parameter_count());
    return m.Losses(5);
  };
  const std::vector<float> one = train(0), summed = train(1), unsummed = train(2);
  cublasDestroy(h);
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(summed[i], one[i], 1e-4 * std::abs(one[i])) << "step " << i;
  }
  EXPECT_GT(std::abs(unsummed[4] - one[4]), 1e-3 * std::abs(one[4]));
}

}  // namespace
}  // namespace stallscope::gpu
