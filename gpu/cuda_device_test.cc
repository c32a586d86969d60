// The CUDA device and kernels. Tests that need a GPU skip themselves where none is visible
// (CI, the development machine); the no-GPU test runs only there.
#include "gpu/cuda_device.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "app/make_device.h"
#include "app/runner.h"
#include "config/scenario.h"
#include "gpu/cuda_util.h"
#include "gpu/cupti_busy.h"
#include "gpu/gpu_test_util.h"
#include "gpu/kernel_ladder.h"
#include "gpu/kernels/gemm.h"
#include "gpu/kernels/training.h"
#include "gpu/mlp_model.h"
#include "pipeline/device.h"
#include "pipeline/preprocess.h"
#include "storage/jpeg.h"

namespace stallscope::gpu {
namespace {

Scenario FromYaml(const std::string& yaml) {
  return ScenarioFile::Parse(yaml, "gpu.yaml").Resolve("base");
}

VariantResult RunOnGpu(const Scenario& s) {
  auto storage = MakeStorage(s, /*quiet=*/true);
  auto device = MakeDevice(s);
  return RunVariant(s, *storage, *device, RunHooks{.quiet = true});
}

TEST(CudaDevice, WithoutAGpuCudaIsAClearSetupError) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is visible here";
  const Scenario s = FromYaml("gpu: {device: cuda}\n");
  try {
    MakeDevice(s);
    FAIL() << "expected a BadInput";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA GPU"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gpu.yaml"), std::string::npos) << e.what();
  }
  // auto falls back to the emulated device.
  EXPECT_EQ(MakeDevice(FromYaml("gpu: {device: auto}\n"))->name(), "emulated");
}

// What a step's kernels cover inside its window (no GPU needed): kernels [1, 2], [3, 4] and
// [6, 9] seen through the window [1.5, 7] cover 0.5 + 1 + 1 s and extend from 1.5 to 7, so the
// gaps between them inside the window are 5.5 - 2.5 = 3 s.
TEST(CuptiBusy, ExtentAndCoverageOfAStepsKernels) {
  const std::vector<Interval> merged = Merge({{6, 9}, {1, 2}, {3, 4}, {3.5, 3.8}});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_DOUBLE_EQ(CoveredSeconds(merged, 1.5, 7), 2.5);
  const Interval e = Extent(merged, 1.5, 7);
  EXPECT_DOUBLE_EQ(e.start, 1.5);
  EXPECT_DOUBLE_EQ(e.end, 7);
  const Interval inner = Extent(merged, 2.5, 5);  // only [3, 4] inside
  EXPECT_DOUBLE_EQ(inner.start, 3);
  EXPECT_DOUBLE_EQ(inner.end, 4);
  const Interval none = Extent(merged, 4.5, 5.5);  // nothing: end before start
  EXPECT_LT(none.end, none.start);
}

// Every rung of the ladder against a float64 CPU reference on a non-square shape.
TEST(GemmLadder, EveryKernelMatchesTheReference) {
  REQUIRE_GPU();
  const int m = 256, n = 512, k = 192;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(m * k), b(k * n);
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  std::vector<double> ref(m * n, 0);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j)
        ref[i * n + j] += static_cast<double>(a[i * k + p]) * b[p * n + j];
  auto bf16 = [](float x) {  // round to nearest even, as __float2bfloat16_rn
    uint32_t u32;
    std::memcpy(&u32, &x, 4);
    u32 += 0x7fff + ((u32 >> 16) & 1);
    return static_cast<uint16_t>(u32 >> 16);
  };
  std::vector<uint16_t> a16(a.size()), b16(b.size()), bt16(b.size());
  for (size_t i = 0; i < a.size(); ++i) a16[i] = bf16(a[i]);
  for (size_t i = 0; i < b.size(); ++i) b16[i] = bf16(b[i]);
  for (int p = 0; p < k; ++p)
    for (int j = 0; j < n; ++j) bt16[j * k + p] = b16[p * n + j];
  DeviceBuffer<float> da(a.size()), db(b.size()), dc(m * n);
  DeviceBuffer<uint16_t> da16(a.size()), db16(b.size()), dbt16(b.size());
  STALLSCOPE_CUDA(cudaMemcpy(da.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice));
  STALLSCOPE_CUDA(cudaMemcpy(db.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  STALLSCOPE_CUDA(cudaMemcpy(da16.get(), a16.data(), a.size() * 2, cudaMemcpyHostToDevice));
  STALLSCOPE_CUDA(cudaMemcpy(db16.get(), b16.data(), b.size() * 2, cudaMemcpyHostToDevice));
  STALLSCOPE_CUDA(cudaMemcpy(dbt16.get(), bt16.data(), b.size() * 2, cudaMemcpyHostToDevice));
  for (int v = 0; v <= static_cast<int>(kLastGemmKernel); ++v) {
    const auto kernel = static_cast<GemmKernel>(v);
    if (!GemmKernelRunsHere(kernel)) continue;
    ASSERT_EQ(GemmShapeError(kernel, m, n, k), "");
    STALLSCOPE_CUDA(cudaMemset(dc.get(), 0xff, m * n * 4));  // NaN: every element must be written
    const bool half = GemmKernelIsBf16(kernel);
    const void* bp = !half                                ? static_cast<void*>(db.get())
                     : GemmKernelTakesTransposedB(kernel) ? static_cast<void*>(dbt16.get())
                                                          : static_cast<void*>(db16.get());
    STALLSCOPE_CUDA(LaunchGemm(kernel, m, n, k, half ? static_cast<void*>(da16.get()) : da.get(),
                               bp, dc.get(), nullptr));
    STALLSCOPE_CUDA(cudaDeviceSynchronize());
    std::vector<float> c(m * n);
    STALLSCOPE_CUDA(cudaMemcpy(c.data(), dc.get(), c.size() * 4, cudaMemcpyDeviceToHost));
    double diff = 0, norm = 0;
    for (int i = 0; i < m * n; ++i) {
      ASSERT_TRUE(std::isfinite(c[i])) << GemmKernelName(kernel) << " left element " << i;
      diff += (c[i] - ref[i]) * (c[i] - ref[i]);
      norm += ref[i] * ref[i];
    }
    EXPECT_LT(std::sqrt(diff / norm), half ? 1e-2 : 1e-5) << GemmKernelName(kernel);
  }
  EXPECT_NE(GemmShapeError(GemmKernel::kDoubleBuffered, 100, 128, 32), "");
}

// Rung 9's persistent grid: more output tiles than SMs, so each block walks several tiles, and
// a K of 5 k-tiles, so the ring's 4 stages change phase in the middle of a tile. The reference
// is cuBLAS SGEMM on the same bf16 values (only the order of fp32 additions differs).
TEST(GemmLadder, TheTmaRungWalksMoreTilesThanSmsAcrossRingPhases) {
  REQUIRE_GPU();
  if (!GemmKernelRunsHere(GemmKernel::kTmaWgmmaBf16)) GTEST_SKIP() << "not a Hopper GPU";
  const int m = 2048, n = 4096, k = 320;
  ASSERT_EQ(GemmShapeError(GemmKernel::kTmaWgmmaBf16, m, n, k), "");
  DeviceBuffer<float> a(m * k), bt(n * k), c(m * n), ref(m * n);
  DeviceBuffer<uint16_t> a16(m * k), bt16(n * k);
  STALLSCOPE_CUDA(FillUniform(a.get(), m * k, 11, nullptr));
  STALLSCOPE_CUDA(FillUniform(bt.get(), n * k, 12, nullptr));
  STALLSCOPE_CUDA(ToBf16(a.get(), m * k, a16.get(), nullptr));
  STALLSCOPE_CUDA(ToBf16(bt.get(), n * k, bt16.get(), nullptr));
  STALLSCOPE_CUDA(FillNaN(c.get(), m * n, nullptr));
  STALLSCOPE_CUDA(
      LaunchGemm(GemmKernel::kTmaWgmmaBf16, m, n, k, a16.get(), bt16.get(), c.get(), nullptr));
  // The reference multiplies the same bf16 values, widened to fp32, with cuBLAS SGEMM (whose
  // fp32 kernels racecheck checks cleanly; its bf16 ones draw hazards of cuBLAS's own).
  std::vector<uint16_t> h16(static_cast<size_t>(std::max(m, n)) * k);
  auto widen = [](uint16_t h) {
    const uint32_t u32 = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u32, 4);
    return f;
  };
  std::vector<float> af(m * k), bf(k * n);
  STALLSCOPE_CUDA(cudaMemcpy(h16.data(), a16.get(), m * k * 2, cudaMemcpyDeviceToHost));
  for (int i = 0; i < m * k; ++i) af[i] = widen(h16[i]);
  STALLSCOPE_CUDA(cudaMemcpy(h16.data(), bt16.get(), n * k * 2, cudaMemcpyDeviceToHost));
  for (int j = 0; j < n; ++j)
    for (int p = 0; p < k; ++p) bf[p * n + j] = widen(h16[j * k + p]);
  STALLSCOPE_CUDA(cudaMemcpy(a.get(), af.data(), m * k * 4, cudaMemcpyHostToDevice));
  STALLSCOPE_CUDA(cudaMemcpy(bt.get(), bf.data(), k * n * 4, cudaMemcpyHostToDevice));  // B
  cublasHandle_t h;
  STALLSCOPE_CUBLAS(cublasCreate(&h));
  const float one = 1, zero = 0;
  STALLSCOPE_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, bt.get(), n, a.get(), k,
                                &zero, ref.get(), n));
  STALLSCOPE_CUDA(cudaDeviceSynchronize());
  cublasDestroy(h);
  std::vector<float> got(m * n), want(m * n);
  STALLSCOPE_CUDA(cudaMemcpy(got.data(), c.get(), got.size() * 4, cudaMemcpyDeviceToHost));
  STALLSCOPE_CUDA(cudaMemcpy(want.data(), ref.get(), want.size() * 4, cudaMemcpyDeviceToHost));
  double diff = 0, norm = 0;
  int bad = 0;
  for (int i = 0; i < m * n; ++i) {
    if (!std::isfinite(got[i])) ++bad;
    diff += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    norm += static_cast<double>(want[i]) * want[i];
  }
  EXPECT_EQ(bad, 0) << "elements left unwritten";
  EXPECT_LT(std::sqrt(diff / norm), 1e-5);
}

// The step's fused element-wise kernels against their definitions, computed here on the CPU:
// softmax cross-entropy (loss, gradient, the gradient's column sums) on 37 samples of 64 rows,
// and ReLU's backward with column sums beside an SGD step, on 300 columns (not a multiple of
// the block) — alone, together, and each without the other.
TEST(TrainingKernels, SoftmaxAndReluBackwardMatchTheirDefinitions) {
  REQUIRE_GPU();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-2, 2);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
  };
  auto upload = [](const std::vector<float>& v) {
    DeviceBuffer<float> d(v.size());
    STALLSCOPE_CUDA(cudaMemcpy(d.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    return d;
  };
  auto download = [](const DeviceBuffer<float>& d, size_t n) {
    std::vector<float> v(n);
    STALLSCOPE_CUDA(cudaMemcpy(v.data(), d.get(), n * 4, cudaMemcpyDeviceToHost));
    return v;
  };
  const int rows = 64, ld = 128, samples = 37, classes = 100;
  const std::vector<float> z = random(rows * ld);
  std::vector<uint32_t> labels(rows);
  for (uint32_t& l : labels) l = rng() % classes;
  std::vector<double> d(rows * ld, 0), col(ld, 0);
  double loss = 0;
  for (int r = 0; r < samples; ++r) {
    double mx = -1e300, sum = 0;
    for (int c = 0; c < classes; ++c) mx = std::max<double>(mx, z[r * ld + c]);
    for (int c = 0; c < classes; ++c) sum += std::exp(z[r * ld + c] - mx);
    loss += (std::log(sum) + mx - z[r * ld + labels[r]]) / samples;
    for (int c = 0; c < classes; ++c) {
      d[r * ld + c] = (std::exp(z[r * ld + c] - mx) / sum - (c == int(labels[r]))) / samples;
      col[c] += d[r * ld + c];
    }
  }
  DeviceBuffer<float> dz = upload(z), dd(rows * ld), dcol(ld), dloss(1);
  DeviceBuffer<uint32_t> dlabels(rows);
  STALLSCOPE_CUDA(cudaMemcpy(dlabels.get(), labels.data(), rows * 4, cudaMemcpyHostToDevice));
  STALLSCOPE_CUDA(FillNaN(dd.get(), rows * ld, nullptr));  // every gradient must be written
  STALLSCOPE_CUDA(FillNaN(dloss.get(), 1, nullptr));       // written, not added to
  STALLSCOPE_CUDA(SoftmaxCrossEntropy(dz.get(), dlabels.get(), rows, ld, samples, classes, dd.get(),
                                      dcol.get(), dloss.get(), nullptr));
  const std::vector<float> got_d = download(dd, rows * ld), got_col = download(dcol, ld);
  EXPECT_NEAR(download(dloss, 1)[0], loss, 1e-5 * std::abs(loss));
  for (int i = 0; i < rows * ld; ++i) ASSERT_NEAR(got_d[i], d[i], 1e-6) << "gradient " << i;
  for (int c = 0; c < ld; ++c) ASSERT_NEAR(got_col[c], col[c], 1e-5) << "column " << c;
  {  // the same with the bias stepped by the column sums it computes
    const std::vector<float> bias = random(ld);
    DeviceBuffer<float> dbias = upload(bias);
    STALLSCOPE_CUDA(SoftmaxCrossEntropy(dz.get(), dlabels.get(), rows, ld, samples, classes,
                                        dd.get(), dcol.get(), dloss.get(), nullptr,
                                        BiasStep{dbias.get(), 0.5f}));
    const std::vector<float> stepped = download(dbias, ld);
    for (int c = 0; c < ld; ++c) {
      ASSERT_NEAR(stepped[c], bias[c] - 0.5 * col[c], 1e-5) << "bias " << c;
    }
  }

  const int n = 300, nw = 1000;
  const float lr = 0.1f;
  const std::vector<float> g = random(rows * n), a = random(rows * n), w = random(nw),
                           dw = random(nw), bias = random(n), db = random(n);
  const std::vector<float> below = random(n);  // the bias of the layer below (mode 3)
  for (int mode = 0; mode < 4; ++mode) {  // 0 both, 1 ReLU only, 2 update only, 3 ReLU + bias step
    DeviceBuffer<float> dg = upload(g), da = upload(a), dsum(n), dwt = upload(w), ddw = upload(dw),
                        db_ = upload(bias), ddb = upload(db), dbelow = upload(below);
    STALLSCOPE_CUDA(FillNaN(dsum.get(), n, nullptr));
    SgdTarget sgd{dwt.get(), ddw.get(), nw, db_.get(), ddb.get(), n, lr};
    if (mode == 1 || mode == 3) sgd = SgdTarget{};
    STALLSCOPE_CUDA(ReluBackwardAndUpdate(mode == 2 ? nullptr : dg.get(), da.get(), rows, n,
                                          dsum.get(), sgd, nullptr,
                                          mode == 3 ? BiasStep{dbelow.get(), lr} : BiasStep{}));
    const std::vector<float> got_g = download(dg, rows * n), got_sum = download(dsum, n),
                             got_w = download(dwt, nw), got_b = download(db_, n),
                             got_below = download(dbelow, n);
    for (int c = 0; c < n; ++c) {
      double s = 0;
      for (int r = 0; r < rows; ++r) {
        const int i = r * n + c;
        const float want = mode == 2 || a[i] > 0 ? g[i] : 0.0f;
        ASSERT_EQ(got_g[i], want) << "mode " << mode << " element " << i;
        s += want;
      }
      if (mode != 2) ASSERT_NEAR(got_sum[c], s, 1e-4) << "mode " << mode << " column " << c;
      // (the GPU may fuse the multiply-add: within a rounding)
      const bool updated = mode == 0 || mode == 2;
      ASSERT_NEAR(got_b[c], updated ? bias[c] - lr * db[c] : bias[c], 1e-6) << "mode " << mode;
      ASSERT_NEAR(got_below[c], mode == 3 ? below[c] - lr * s : below[c], 1e-4) << "mode " << mode;
    }
    for (int i = 0; i < nw; ++i) {
      ASSERT_NEAR(got_w[i], mode == 0 || mode == 2 ? w[i] - lr * dw[i] : w[i], 1e-6)
          << "mode " << mode << " w " << i;
    }
  }
}

// normalize_on: device: the first kernel of a step normalizes rows of a JPEG crop's pixels
// (DecodeJpegCrop) into the very input that the host's floats (DecodeJpegSample) give, bit for
// bit, at the native scale; and the rows' padding and the columns past the image stay zero.
TEST(TrainingKernels, GatherInputNormalizesPixelsAsTheHostDoes) {
  REQUIRE_GPU();
  JpegEncoder encoder;
  JpegDecoder decoder;
  RgbImage scratch;
  constexpr int kSide = 256, kCrop = 224, kSamples = 3, kRowsOut = 4;
  constexpr int kValues = 3 * kCrop * kCrop, kCols = kValues + 32;
  constexpr uint64_t kPixelRow = kValues + 64, kFloatRow = kValues * 4 + 64;  // padded rows
  std::vector<uint8_t> pixels(kSamples * kPixelRow, 0xee);
  std::vector<std::byte> floats(kSamples * kFloatRow, std::byte{0});
  for (int i = 0; i < kSamples; ++i) {
    std::vector<uint8_t> image(kSide * kSide * 3);
    for (size_t k = 0; k < image.size(); ++k) image[k] = static_cast<uint8_t>(k * (i + 3) / 7);
    const std::vector<std::byte> jpeg = encoder.Encode(image.data(), kSide, kSide, 90);
    ASSERT_TRUE(DecodeJpegCrop(decoder, scratch, jpeg.data(), jpeg.size(), kCrop,
                               &pixels[i * kPixelRow], nullptr));
    ASSERT_TRUE(DecodeJpegSample(decoder, scratch, jpeg.data(), jpeg.size(), kCrop,
                                 reinterpret_cast<float*>(&floats[i * kFloatRow]), nullptr));
  }
  DeviceBuffer<uint8_t> dpixels(pixels.size());
  DeviceBuffer<std::byte> dfloats(floats.size());
  STALLSCOPE_CUDA(cudaMemcpy(dpixels.get(), pixels.data(), pixels.size(), cudaMemcpyHostToDevice));
  STALLSCOPE_CUDA(cudaMemcpy(dfloats.get(), floats.data(), floats.size(), cudaMemcpyHostToDevice));
  const ImageNorm norm = ImageNetNorm();
  StagedImage image{.side = kCrop};
  std::copy(norm.scale, norm.scale + 3, image.scale);
  std::copy(norm.shift, norm.shift + 3, image.shift);
  DeviceBuffer<float> from_pixels(kRowsOut * kCols), from_floats(kRowsOut * kCols);
  STALLSCOPE_CUDA(FillNaN(from_pixels.get(), kRowsOut * kCols, nullptr));
  STALLSCOPE_CUDA(GatherInput(dpixels.get(), false, image, kPixelRow, kSamples, kCols, kRowsOut,
                              kCols, from_pixels.get(), nullptr));
  STALLSCOPE_CUDA(GatherInput(dfloats.get(), true, {}, kFloatRow, kSamples, kCols, kRowsOut, kCols,
                              from_floats.get(), nullptr));
  std::vector<float> a(kRowsOut * kCols), b(kRowsOut * kCols);
  STALLSCOPE_CUDA(cudaMemcpy(a.data(), from_pixels.get(), a.size() * 4, cudaMemcpyDeviceToHost));
  STALLSCOPE_CUDA(cudaMemcpy(b.data(), from_floats.get(), b.size() * 4, cudaMemcpyDeviceToHost));
  int differ = 0, nonzero_padding = 0;
  for (int r = 0; r < kRowsOut; ++r) {
    for (int c = 0; c < kCols; ++c) {
      const float x = a[r * kCols + c];
      if (r >= kSamples || c >= kValues) {
        nonzero_padding += x != 0;
      } else {
        differ += x != b[r * kCols + c];
      }
    }
  }
  EXPECT_EQ(differ, 0) << "of " << kSamples * kValues;
  EXPECT_EQ(nonzero_padding, 0);
  EXPECT_NE(a[5], a[kValues / 2]) << "a real image, not a constant";
}

// The bf16 conversion of the rung-9 operands: every element rounded to nearest even, in both
// layouts, on a shape that is not a multiple of the 32×32 tile.
TEST(TrainingKernels, ToBf16MatrixRoundsInBothLayouts) {
  REQUIRE_GPU();
  const int rows = 70, cols = 100;
  std::vector<float> in(rows * cols);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-3, 3);
  for (float& x : in) x = u(rng);
  DeviceBuffer<float> din(in.size());
  DeviceBuffer<uint16_t> out(in.size());
  STALLSCOPE_CUDA(cudaMemcpy(din.get(), in.data(), in.size() * 4, cudaMemcpyHostToDevice));
  for (const bool transpose : {false, true}) {
    STALLSCOPE_CUDA(cudaMemset(out.get(), 0xff, in.size() * 2));
    STALLSCOPE_CUDA(ToBf16Matrix(din.get(), rows, cols, transpose, out.get(), nullptr));
    std::vector<uint16_t> got(in.size());
    STALLSCOPE_CUDA(cudaMemcpy(got.data(), out.get(), got.size() * 2, cudaMemcpyDeviceToHost));
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        uint32_t bits;
        std::memcpy(&bits, &in[r * cols + c], 4);
        const auto want = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
        ASSERT_EQ(got[transpose ? c * rows + r : r * cols + c], want)
            << (transpose ? "transposed" : "as is") << " row " << r << " column " << c;
      }
    }
  }
}

const char* kComputeBound = R"(
dataset: {samples: 8192, sample_size: 4KiB, classes: 100}
storage: {kind: memory}
loader: {batch_size: 256, prefetch: 8, workers: 4, preprocess: {kind: normalize}}
gpu: {device: cuda, step_time: 50ms, model: {input: 1024, hidden: 0, layers: 4, classes: 100}}
run: {epochs: 10, verify: false}
)";

// A run fed from RAM: the GPU is busy nearly all the window, CUPTI and events agree (they
// differ by the gaps between a step's kernels, about 0.2 ms per step here, so the step is
// long enough for 1 pp), the loss falls, and every batch's bytes crossed to the device.
TEST(CudaDevice, ComputeBoundRunIsBusyAndLearns) {
  REQUIRE_GPU();
  const Scenario s = FromYaml(kComputeBound);
  const VariantResult v = RunOnGpu(s);
  EXPECT_EQ(v.gpu.busy_source, "cupti") << (v.gpu.notes.empty() ? "" : v.gpu.notes[0]);
  EXPECT_LT(v.gpu_idle_fraction, 0.05);
  EXPECT_NEAR(1 - v.gpu_idle_fraction, v.event_busy_fraction, 0.01);
  EXPECT_LT(v.loss_last, 0.5 * v.loss_first) << v.loss_first << " -> " << v.loss_last;
  EXPECT_EQ(v.gpu.h2d_bytes, 10ULL * 8192 * 4096 * sizeof(float));
  EXPECT_GT(v.gpu.h2d_seconds, 0);
  EXPECT_GE(v.gpu.h2d_overlap_seconds, 0);
  EXPECT_LE(v.gpu.h2d_overlap_seconds, v.gpu.h2d_seconds * 1.0001);
  double calibrated = 0;
  for (const auto& [k, x] : v.gpu.facts) {
    if (k == "calibrated_step_seconds") calibrated = x;
  }
  EXPECT_NEAR(calibrated, 0.050, 0.005);
}

// Steps queued on the stream (each launched while the one before still runs, on three input
// buffers) train exactly as steps run one at a time (STALLSCOPE_STEP_QUEUE=0): the same
// per-step losses. A step handed another buffer's graph, events or labels, or a batch copied
// into a buffer its queued step still reads (with neither the third buffer nor the copy's
// wait for that step), would train differently.
TEST(CudaDevice, QueuedStepsTrainAsStepsOneAtATime) {
  REQUIRE_GPU();
  const Scenario s = FromYaml(R"(
dataset: {samples: 4096, sample_size: 4KiB, classes: 100}
storage: {kind: memory}
loader: {batch_size: 256, prefetch: 8, workers: 4, preprocess: {kind: normalize}}
gpu: {device: cuda, step_time: 5ms, model: {input: 1024, hidden: 0, layers: 4, classes: 100}}
run: {epochs: 4, verify: false}
)");
  auto queued_steps = [](const VariantResult& v) {
    for (const auto& [k, x] : v.gpu.facts) {
      if (k == "steps_queued_behind_another") return x;
    }
    return -1.0;
  };
  setenv("STALLSCOPE_STEP_QUEUE", "0", 1);
  const VariantResult one = RunOnGpu(s);
  unsetenv("STALLSCOPE_STEP_QUEUE");
  const VariantResult queued = RunOnGpu(s);
  EXPECT_EQ(queued_steps(one), 0);
  EXPECT_GT(queued_steps(queued), 32) << "of 64 steps, fed from RAM";
  ASSERT_EQ(one.gpu.loss.size(), 64u);
  ASSERT_EQ(queued.gpu.loss.size(), one.gpu.loss.size());
  for (size_t i = 0; i < one.gpu.loss.size(); ++i) {
    // (the loss is summed with atomics: equal up to the order of a float sum)
    EXPECT_NEAR(queued.gpu.loss[i], one.gpu.loss[i], 1e-5 * std::abs(one.gpu.loss[i]))
        << "step " << i;
  }
  EXPECT_LT(queued.loss_last, 0.9 * queued.loss_first);
}

TEST(CudaDevice, ImpossibleModelsAreSetupErrors) {
  REQUIRE_GPU();
  Scenario s = FromYaml(kComputeBound);
  s.gpu.model.hidden = 1 << 20;  // 4 TiB of weights
  EXPECT_THROW(MakeDevice(s), BadInput);
  s.gpu.model.hidden = 0;
  s.gpu.step_time = 1e-6;  // shorter than any step
  try {
    MakeDevice(s);
    FAIL() << "expected a BadInput";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be reached"), std::string::npos) << e.what();
  }
}

TEST(KernelLadder, SmallSizeValidatesEveryVersion) {
  REQUIRE_GPU();
  LadderOptions o;
  o.sizes = {512};
  o.shapes = {{256, 512, 1024}};
  const LadderResult r = RunKernelLadder(o);
  // 9 rungs and 2 cuBLAS at 512³; rungs 7–9 and cuBLAS bf16 at the extra shape.
  ASSERT_EQ(r.rows.size(), 15u);
  for (const LadderRow& row : r.rows) {
    EXPECT_TRUE(row.ran && row.valid) << row.kernel << " error " << row.relative_error;
    EXPECT_GT(row.tflops, 0) << row.kernel;
    const bool own_bf16 = row.precision == "bf16" && row.kernel != "cuBLAS bf16";
    EXPECT_EQ(row.alternated_pairs, own_bf16 ? kAlternatedPairs : 0) << row.kernel;
    if (own_bf16) EXPECT_NEAR(row.percent_of_cublas, 100 * row.cublas_ms / row.ms, 1e-9);
  }
  EXPECT_EQ(r.rows.back().shape.k, 1024);
  EXPECT_GT(r.copy_bandwidth, 1e11);
}

}  // namespace
}  // namespace stallscope::gpu
