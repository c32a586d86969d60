#include "storage/jpeg.h"

#include <turbojpeg.h>

#include <algorithm>
#include <stdexcept>

namespace stallscope {

bool LooksLikeJpeg(const std::byte* data, size_t n) {
  return n >= 3 && data[0] == std::byte{0xff} && data[1] == std::byte{0xd8} &&
         data[2] == std::byte{0xff};
}

JpegEncoder::JpegEncoder() : handle_(tjInitCompress()) {
  if (!handle_) throw std::runtime_error("TurboJPEG: cannot create a compressor");
}

JpegEncoder::~JpegEncoder() { tjDestroy(static_cast<tjhandle>(handle_)); }

std::vector<std::byte> JpegEncoder::Encode(const uint8_t* rgb, int width, int height, int quality) {
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  if (tjCompress2(static_cast<tjhandle>(handle_), rgb, width, 0, height, TJPF_RGB, &jpeg, &size,
                  TJSAMP_420, quality, 0) != 0) {
    const std::string why = tjGetErrorStr2(static_cast<tjhandle>(handle_));
    tjFree(jpeg);
    throw std::runtime_error("TurboJPEG: " + why);
  }
  std::vector<std::byte> out(size);
  std::copy_n(reinterpret_cast<const std::byte*>(jpeg), size, out.data());
  tjFree(jpeg);
  return out;
}

JpegDecoder::JpegDecoder() : handle_(tjInitDecompress()) {
  if (!handle_) throw std::runtime_error("TurboJPEG: cannot create a decompressor");
}

JpegDecoder::~JpegDecoder() { tjDestroy(static_cast<tjhandle>(handle_)); }

bool JpegDecoder::Decode(const std::byte* data, size_t n, int min_side, RgbImage* out,
                         std::string* error) {
  auto* h = static_cast<tjhandle>(handle_);
  const auto* buf = reinterpret_cast<const unsigned char*>(data);
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(h, buf, n, &width, &height, &subsamp, &colorspace) != 0 || width <= 0 ||
      height <= 0) {
    if (error) *error = width <= 0 ? std::string("no image in the JPEG data") : tjGetErrorStr2(h);
    return false;
  }
  // The smallest scaling whose shorter side still covers min_side (1/1 if none is smaller).
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  int best_w = width, best_h = height;
  for (int i = 0; i < count; ++i) {
    const int w = TJSCALED(width, factors[i]), h2 = TJSCALED(height, factors[i]);
    if (std::min(w, h2) >= min_side &&
        static_cast<int64_t>(w) * h2 < static_cast<int64_t>(best_w) * best_h) {
      best_w = w;
      best_h = h2;
    }
  }
  out->width = best_w;
  out->height = best_h;
  out->pixels.resize(static_cast<size_t>(best_w) * best_h * 3);
  // Warnings count too: a truncated file decodes to a partly grey image, which PIL refuses
  // by default ("image file is truncated").
  if (tjDecompress2(h, buf, n, out->pixels.data(), best_w, 0, best_h, TJPF_RGB, 0) != 0) {
    if (error) *error = tjGetErrorStr2(h);
    return false;
  }
  return true;
}

}  // namespace stallscope
