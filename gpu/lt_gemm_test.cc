// LtBiasGemm (gpu/lt_gemm.h) against SGEMM, the bias and ReLU-backward kernels and float64
// references, and the nodes its plans launch when captured. GPU tests: they skip without one.
#include "gpu/lt_gemm.h"

#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/gpu_test_util.h"
#include "gpu/kernels/training.h"

namespace stallscope::gpu {
namespace {

// The forward GEMM through cuBLASLt, bias and ReLU in its epilogue, computes what SGEMM and
// the bias kernel compute: C = A·W + bias (ReLU on hidden layers), row-major, on values where
// the bias and the ReLU both matter (negative and positive sums, a bias of either sign).
TEST(LtBiasGemm, EpilogueAddsTheBiasAndAppliesReluAsTheBiasKernelDoes) {
  REQUIRE_GPU();
  const int rows = 256, in = 384, out = 128;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(rows * in), w(in * out), bias(out);
  for (float& x : a) x = u(rng);
  for (float& x : w) x = u(rng);
  for (float& x : bias) x = 4 * u(rng);
  DeviceBuffer<float> da(a.size()), dw(w.size()), db(bias.size()), c1(rows * out), c2(rows * out);
  STALLSCOPE_CUDA(cudaMemcpy(da.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice));
  STALLSCOPE_CUDA(cudaMemcpy(dw.get(), w.data(), w.size() * 4, cudaMemcpyHostToDevice));
  STALLSCOPE_CUDA(cudaMemcpy(db.get(), bias.data(), bias.size() * 4, cudaMemcpyHostToDevice));
  cublasHandle_t h;
  STALLSCOPE_CUBLAS(cublasCreate(&h));
  LtBiasGemm lt;
  for (const bool relu : {false, true}) {
    ASSERT_TRUE(lt.Plan(0, rows, in, out, db.get(), relu));
    ASSERT_TRUE(lt.Run(0, da.get(), dw.get(), c1.get(), nullptr));
    const float one = 1, zero = 0;
    STALLSCOPE_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, out, rows, in, &one, dw.get(), out,
                                  da.get(), in, &zero, c2.get(), out));
    STALLSCOPE_CUDA(BiasActivation(c2.get(), db.get(), rows, out, relu, nullptr));
    std::vector<float> got(rows * out), want(rows * out);
    STALLSCOPE_CUDA(cudaMemcpy(got.data(), c1.get(), got.size() * 4, cudaMemcpyDeviceToHost));
    STALLSCOPE_CUDA(cudaMemcpy(want.data(), c2.get(), want.size() * 4, cudaMemcpyDeviceToHost));
    int zeros = 0, bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      zeros += want[i] == 0;
      bad += std::abs(got[i] - want[i]) > 1e-4f * (1 + std::abs(want[i]));
    }
    EXPECT_EQ(bad, 0) << (relu ? "relu" : "bias only");
    if (relu) EXPECT_GT(zeros, rows * out / 4) << "the ReLU clipped too few values to be tested";
    // A row computed by hand: the bias reaches every row, along the output features.
    for (int j = 0; j < out; ++j) {
      double sum = bias[j];
      for (int k = 0; k < in; ++k) sum += static_cast<double>(a[k]) * w[k * out + j];
      if (relu) sum = std::max(sum, 0.0);
      EXPECT_NEAR(got[j], sum, 1e-3 * (1 + std::abs(sum))) << "row 0, column " << j;
    }
  }
  cublasDestroy(h);
}

// LtBiasGemm::Gemm computes what cublasSgemm computes for the row-major C = alpha·op(A)·op(B)
// + beta·C of the training step (every transposition; alpha -lr and beta 1 as the fused SGD
// step uses them), on a shape no dimension of which is square, against a float64 reference.
TEST(LtBiasGemm, GemmComputesWhatSgemmComputesForEveryTransposition) {
  REQUIRE_GPU();
  const int m = 192, n = 320, k = 256;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(m * k), b(k * n), c0(m * n);
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  for (float& x : c0) x = u(rng);
  DeviceBuffer<float> da(a.size()), db(b.size()), dc(c0.size());
  STALLSCOPE_CUDA(cudaMemcpy(da.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice));
  STALLSCOPE_CUDA(cudaMemcpy(db.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  LtBiasGemm lt;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{-0.05f, 1.0f}}) {
      STALLSCOPE_CUDA(cudaMemcpy(dc.get(), c0.data(), c0.size() * 4, cudaMemcpyHostToDevice));
      // The same buffers read as op(A) (m × k) and op(B) (k × n): stored transposed when ta/tb.
      ASSERT_TRUE(lt.Gemm(ta, tb, m, n, k, da.get(), db.get(), dc.get(), alpha, beta, nullptr));
      std::vector<float> got(c0.size());
      STALLSCOPE_CUDA(cudaMemcpy(got.data(), dc.get(), got.size() * 4, cudaMemcpyDeviceToHost));
      int bad = 0;
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double sum = 0;
          for (int p = 0; p < k; ++p) {
            const double x = ta ? a[p * m + i] : a[i * k + p];
            const double y = tb ? b[j * k + p] : b[p * n + j];
            sum += x * y;
          }
          const double want = alpha * sum + beta * c0[i * n + j];
          bad += std::abs(got[i * n + j] - want) > 1e-4 * (1 + std::abs(want));
        }
      }
      EXPECT_EQ(bad, 0) << "trans_a " << ta << " trans_b " << tb << " alpha " << alpha;
    }
  }
}

// Every GEMM the cuBLAS path plans launches as kernels only where cuBLASLt has such an
// algorithm among its first candidates: captured into a graph, a plan's GEMM is kernel nodes
// and nothing else (no memset of a split-K workspace, no allocation). The shapes are the
// compute-bound scenario's at 5 ms steps, where the heuristic's first choices zero their
// workspace first (2026-12-05, H100: memset nodes before the hidden layers' GEMMs).
TEST(LtBiasGemm, PlannedGemmsLaunchKernelsOnly) {
  REQUIRE_GPU();
  const int rows = 256, in = 1024, hidden = 7680, classes = 128;
  DeviceBuffer<float> x(static_cast<uint64_t>(rows) * hidden),
      y(static_cast<uint64_t>(rows) * hidden), w(static_cast<uint64_t>(hidden) * hidden),
      bias(hidden);
  LtBiasGemm lt;
  ASSERT_TRUE(lt.Plan(0, rows, in, hidden, bias.get(), true));
  ASSERT_TRUE(lt.Plan(1, rows, hidden, hidden, bias.get(), true));
  ASSERT_TRUE(lt.Plan(2, rows, hidden, classes, bias.get(), false));
  cudaStream_t stream;
  STALLSCOPE_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  STALLSCOPE_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int l = 0; l < 3; ++l) ASSERT_TRUE(lt.Run(l, x.get(), w.get(), y.get(), stream));
  // The backward GEMMs: dA = dZ·Wᵀ, and W -= lr · Aᵀ·dZ.
  ASSERT_TRUE(lt.Gemm(false, true, rows, hidden, hidden, x.get(), w.get(), y.get(), 1, 0, stream));
  ASSERT_TRUE(
      lt.Gemm(true, false, hidden, hidden, rows, x.get(), y.get(), w.get(), -0.01f, 1, stream));
  ASSERT_TRUE(lt.Gemm(false, true, rows, hidden, classes, x.get(), w.get(), y.get(), 1, 0, stream));
  ASSERT_TRUE(
      lt.Gemm(true, false, hidden, classes, rows, x.get(), y.get(), w.get(), -0.01f, 1, stream));
  cudaGraph_t graph = nullptr;
  STALLSCOPE_CUDA(cudaStreamEndCapture(stream, &graph));
  size_t count = 0;
  STALLSCOPE_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  STALLSCOPE_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  int kernels = 0, other = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    STALLSCOPE_CUDA(cudaGraphNodeGetType(node, &type));
    (type == cudaGraphNodeTypeKernel ? kernels : other) += 1;
  }
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  EXPECT_GE(kernels, 7);
  int not_kernels_only = 0;
  for (const LtBiasGemm::Choice& c : lt.choices()) {
    not_kernels_only += !c.kernels_only;
    std::printf("  %s layer %d: candidate %d%s\n", c.what, c.layer, c.candidate,
                c.kernels_only ? "" : " (not kernels only)");
  }
  EXPECT_EQ(other, 0) << not_kernels_only << " plans launch more than kernels";
}

// A hidden layer's input gradient through cuBLASLt (DRELU_BGRAD, with the mask the forward
// GEMM below kept) computes what SGEMM and the ReLU-backward kernel compute: the gradient
// masked where the forward output was clipped, and its column sums.
TEST(LtBiasGemm, BackwardAppliesReluMaskAndSumsTheBiasGradient) {
  REQUIRE_GPU();
  const int rows = 256, in = 384, hidden = 256,
            out = 128;  // forward in → hidden, then hidden → out
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1, 1);
  auto upload = [&](int n) {
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    DeviceBuffer<float> d(n);
    STALLSCOPE_CUDA(cudaMemcpy(d.get(), v.data(), n * 4, cudaMemcpyHostToDevice));
    return d;
  };
  DeviceBuffer<float> a = upload(rows * in), w0 = upload(in * hidden), b0 = upload(hidden),
                      w1 = upload(hidden * out), dz = upload(rows * out), z(rows * hidden),
                      got(rows * hidden), want(rows * hidden), got_sum(hidden), want_sum(hidden);
  DeviceBuffer<uint8_t> mask(static_cast<uint64_t>(hidden) * rows / 8);
  LtBiasGemm lt;
  ASSERT_TRUE(lt.Plan(0, rows, in, hidden, b0.get(), true, mask.get()));
  if (!lt.PlanBackward(1, rows, hidden, out, mask.get(), got_sum.get())) {
    GTEST_SKIP() << "cuBLASLt has no DRELU_BGRAD algorithm for fp32 here";
  }
  ASSERT_TRUE(lt.Run(0, a.get(), w0.get(), z.get(), nullptr));
  ASSERT_TRUE(lt.RunBackward(1, dz.get(), w1.get(), got.get(), nullptr));
  cublasHandle_t h;
  STALLSCOPE_CUBLAS(cublasCreate(&h));
  const float one = 1, zero = 0;  // row-major want = dz · w1ᵀ
  STALLSCOPE_CUBLAS(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, hidden, rows, out, &one, w1.get(), out,
                                dz.get(), out, &zero, want.get(), hidden));
  STALLSCOPE_CUDA(ReluBackwardAndUpdate(want.get(), z.get(), rows, hidden, want_sum.get(),
                                        SgdTarget{}, nullptr));
  STALLSCOPE_CUDA(cudaDeviceSynchronize());
  cublasDestroy(h);
  auto host = [](const DeviceBuffer<float>& d, int n) {
    std::vector<float> v(n);
    STALLSCOPE_CUDA(cudaMemcpy(v.data(), d.get(), n * 4, cudaMemcpyDeviceToHost));
    return v;
  };
  const std::vector<float> g = host(got, rows * hidden), e = host(want, rows * hidden),
                           gs = host(got_sum, hidden), es = host(want_sum, hidden);
  int zeros = 0;
  for (int i = 0; i < rows * hidden; ++i) {
    zeros += e[i] == 0;
    ASSERT_NEAR(g[i], e[i], 1e-4 * (1 + std::abs(e[i]))) << "element " << i;
  }
  EXPECT_GT(zeros, rows * hidden / 4) << "the mask clipped too few values to be tested";
  for (int c = 0; c < hidden; ++c) ASSERT_NEAR(gs[c], es[c], 1e-3 * (1 + std::abs(es[c]))) << c;
}

// cuBLAS and cuBLASLt are loaded on first use (gpu/cublas_lazy.cc), not linked: the forwarders
// reach the libraries' own definitions. Host-only calls, so this runs without a GPU: the status
// text comes from libcublas, and a matrix layout is made and described back by libcublasLt.
TEST(CublasLazy, ForwardersReachTheLibrariesWithoutAGpu) {
  EXPECT_STREQ(cublasGetStatusString(CUBLAS_STATUS_SUCCESS), "success");
  EXPECT_NE(
      std::string(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE)).find("unsupported value"),
      std::string::npos);
  cublasLtMatrixLayout_t layout = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, 384, 128, 384), CUBLAS_STATUS_SUCCESS);
  ASSERT_NE(layout, nullptr);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(layout), CUBLAS_STATUS_SUCCESS);
}

}  // namespace
}  // namespace stallscope::gpu
