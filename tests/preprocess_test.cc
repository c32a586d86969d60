// CPU preprocessing (pipeline/preprocess.h): loader.preprocess.cost's CPU time, and
// jpeg-decode's crop and normalization against the decoder's own pixels.
#include "pipeline/preprocess.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/cores.h"
#include "pipeline/device.h"
#include "storage/jpeg.h"

namespace stallscope {
namespace {

// loader.preprocess.cost is CPU time of the worker thread, whatever the calibration says: a
// burner whose speed is taken as half or twice the measured one still burns 20 ms of the
// thread's CPU clock (an iteration count from the calibration burned 10 or 40), and so does
// one preempted by a busy thread on every core.
TEST(Preprocess, CostIsTheWorkerThreadsCpuTimeWhateverTheCalibration) {
  const double rate = CpuBurner::Get().iterations_per_second();
  const auto cpu_of_burn = [](const CpuBurner& b) {
    const double t0 = ThreadCpuSeconds();
    volatile uint64_t sink = b.Burn(0.02, 7);
    (void)sink;
    return ThreadCpuSeconds() - t0;
  };
  // 2 ms either way: an iteration count would burn 10 or 40 ms. A fresh clone's suite on the
  // 2-core VM measured 20.7 ms once at x2 (2026-12-06): on a guest, time the host takes the
  // virtual core away can count as the thread's CPU time.
  constexpr double kTolerance = 0.002;
  for (const double f : {0.5, 1.0, 2.0}) {
    EXPECT_NEAR(cpu_of_burn(CpuBurner(rate * f)), 0.02, kTolerance) << "calibration x" << f;
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (unsigned c = 0; c < UsableCores(); ++c) {
    hogs.emplace_back([&stop] { CpuBurner::Get().Burn(60, 1, &stop); });
  }
  const double wall0 = MonotonicSeconds();
  const double cpu = cpu_of_burn(CpuBurner::Get());
  const double wall = MonotonicSeconds() - wall0;
  stop = true;
  for (auto& t : hogs) t.join();
  EXPECT_NEAR(cpu, 0.02, kTolerance) << "beside busy threads, wall " << wall;
}

// At the native scale the crop is the decoded image's centre 224×224, pixel for pixel: each
// output float is (v / 255 − mean) / std of the decoded pixel (the decoder's own RGB, left in
// the scratch image) at the same place and channel. A gradient image, so a pixel or channel
// taken from the wrong place shows.
TEST(JpegDecode, TheCentreCropIsTheDecodedPixelsNormalizedPlaneByPlane) {
  JpegEncoder encoder;
  JpegDecoder decoder;
  RgbImage scratch;
  constexpr int kSide = 256, kCrop = 224, kOff = (kSide - kCrop) / 2;
  std::vector<uint8_t> image(kSide * kSide * 3);
  for (int y = 0; y < kSide; ++y) {
    for (int x = 0; x < kSide; ++x) {
      uint8_t* p = &image[(y * kSide + x) * 3];
      p[0] = static_cast<uint8_t>(x);
      p[1] = static_cast<uint8_t>(y);
      p[2] = static_cast<uint8_t>((x * 3 + y * 5) & 255);
    }
  }
  const std::vector<std::byte> jpeg = encoder.Encode(image.data(), kSide, kSide, 95);
  std::vector<float> out(JpegSampleFloats(kCrop));
  std::string why;
  ASSERT_TRUE(DecodeJpegSample(decoder, scratch, jpeg.data(), jpeg.size(), kCrop, out.data(), &why))
      << why;
  ASSERT_EQ(scratch.width, kSide);
  const float mean[3] = {0.485f, 0.456f, 0.406f}, stdev[3] = {0.229f, 0.224f, 0.225f};
  int wrong = 0;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < kCrop; ++y) {
      for (int x = 0; x < kCrop; ++x) {
        const uint8_t v = scratch.pixels[((y + kOff) * kSide + x + kOff) * 3 + c];
        const float expect = (v / 255.f - mean[c]) / stdev[c];
        wrong += std::abs(out[(c * kCrop + y) * kCrop + x] - expect) > 1e-5f;
      }
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << 3 * kCrop * kCrop << " floats";
}

// normalize_on: device hands the device the crop's pixels (HWC uint8) instead of its floats:
// normalized as the device does it (ImageNetNorm, multiply then add), they are the host's floats
// exactly at the native scale, and within half a level where the crop is resampled (rounded to
// the nearest level). Gradient images, so a pixel or channel from the wrong place shows.
TEST(JpegDecode, TheDevicesPixelsAreTheHostsFloatsBeforeTheNormalization) {
  JpegEncoder encoder;
  JpegDecoder decoder;
  RgbImage scratch;
  const ImageNorm norm = ImageNetNorm();
  constexpr int kCrop = 224, kPlane = kCrop * kCrop;
  for (const auto& [w, h] : {std::pair{256, 256}, std::pair{1024, 768}, std::pair{300, 260}}) {
    std::vector<uint8_t> image(static_cast<size_t>(w) * h * 3);
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        uint8_t* p = &image[(static_cast<size_t>(y) * w + x) * 3];
        p[0] = static_cast<uint8_t>(x);
        p[1] = static_cast<uint8_t>(y);
        p[2] = static_cast<uint8_t>((x * 3 + y * 5) & 255);
      }
    }
    const std::vector<std::byte> jpeg = encoder.Encode(image.data(), w, h, 95);
    std::vector<float> floats(JpegSampleFloats(kCrop));
    std::vector<uint8_t> pixels(JpegSampleFloats(kCrop), 7);
    std::string why;
    ASSERT_TRUE(
        DecodeJpegSample(decoder, scratch, jpeg.data(), jpeg.size(), kCrop, floats.data(), &why))
        << why;
    ASSERT_TRUE(
        DecodeJpegCrop(decoder, scratch, jpeg.data(), jpeg.size(), kCrop, pixels.data(), &why))
        << why;
    const bool native = w == 256 && h == 256;
    double worst = 0;
    int wrong = 0;
    for (int c = 0; c < 3; ++c) {
      for (int p = 0; p < kPlane; ++p) {
        const float host = floats[c * kPlane + p];
        const float device = pixels[p * 3 + c] * norm.scale[c] + norm.shift[c];
        worst = std::max<double>(worst, std::abs(device - host) / norm.scale[c]);  // in levels
        wrong += native ? device != host : std::abs(device - host) > norm.scale[c] * 0.501f;
      }
    }
    EXPECT_EQ(wrong, 0) << w << "x" << h << ": worst " << worst << " levels";
  }
  const std::byte garbage[16] = {std::byte{0xff}, std::byte{0xd8}, std::byte{0xff}};
  std::vector<uint8_t> out(JpegSampleFloats(32), 7);
  EXPECT_FALSE(DecodeJpegCrop(decoder, scratch, garbage, sizeof(garbage), 32, out.data(), nullptr));
  EXPECT_EQ(*std::max_element(out.begin(), out.end()), 0);
}

// jpeg-decode is torchvision's Resize(256) + CenterCrop(224) + ToTensor + Normalize: a flat
// colour comes back as (v / 255 − mean) / std in every pixel of every channel plane, at the
// native scale (256×256), through DCT scaling and resampling (1024×768) alike.
TEST(JpegDecode, FlatColourComesBackNormalizedInEveryPixel) {
  JpegEncoder encoder;
  JpegDecoder decoder;
  RgbImage scratch;
  const uint8_t rgb[3] = {200, 100, 50};
  const float expect[3] = {(200 / 255.f - 0.485f) / 0.229f, (100 / 255.f - 0.456f) / 0.224f,
                           (50 / 255.f - 0.406f) / 0.225f};
  for (const auto& [w, h] : {std::pair{256, 256}, std::pair{1024, 768}}) {
    std::vector<uint8_t> image(static_cast<size_t>(w) * h * 3);
    for (size_t i = 0; i < image.size(); ++i) image[i] = rgb[i % 3];
    const std::vector<std::byte> jpeg = encoder.Encode(image.data(), w, h, 95);
    ASSERT_TRUE(LooksLikeJpeg(jpeg.data(), jpeg.size()));
    std::vector<float> out(JpegSampleFloats(224), -99.f);
    std::string why;
    ASSERT_TRUE(DecodeJpegSample(decoder, scratch, jpeg.data(), jpeg.size(), 224, out.data(), &why))
        << why;
    for (int c = 0; c < 3; ++c) {
      for (int p = 0; p < 224 * 224; p += 997) {
        EXPECT_NEAR(out[c * 224 * 224 + p], expect[c], 0.05) << w << "x" << h << " c" << c;
      }
    }
    EXPECT_LE(std::max(scratch.width, scratch.height), std::max(w, h) / (w > 256 ? 2 : 1))
        << "decoded at a reduced DCT scale";
  }
  const std::byte garbage[16] = {std::byte{0xff}, std::byte{0xd8}, std::byte{0xff}};
  std::vector<float> out(JpegSampleFloats(32), 7.f);
  std::string why;
  EXPECT_FALSE(DecodeJpegSample(decoder, scratch, garbage, sizeof(garbage), 32, out.data(), &why));
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(*std::max_element(out.begin(), out.end()), 0.f);
}

}  // namespace
}  // namespace stallscope
