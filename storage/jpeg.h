// JPEG through libjpeg-turbo's TurboJPEG API: encoding for `stallscope gen --format jpeg`,
// decoding for `preprocess: jpeg-decode`.
//
// JpegDecoder::Decode picks the smallest of libjpeg-turbo's DCT scaling factors (1/8 … 2)
// whose image still covers `min_side` on its shorter side, so an image much larger than
// the model input is decoded at a fraction of the cost, as PIL's draft mode does.
//
// Thread-safety: a TurboJPEG handle is not thread-safe; use one encoder/decoder per thread.
#ifndef STALLSCOPE_STORAGE_JPEG_H_
#define STALLSCOPE_STORAGE_JPEG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stallscope {

// True when `data` starts with a JPEG SOI marker (FF D8 FF).
bool LooksLikeJpeg(const std::byte* data, size_t n);

class JpegEncoder {
 public:
  JpegEncoder();
  ~JpegEncoder();
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;
  // Encodes `rgb` (width × height × 3 bytes) at `quality` (1–100, 4:2:0). Throws
  // std::runtime_error on failure.
  std::vector<std::byte> Encode(const uint8_t* rgb, int width, int height, int quality);

 private:
  void* handle_;
};

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // width × height × 3
};

class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;
  // Decodes into `out` (its buffer is reused across calls). Returns false with the reason
  // in *error for data that is not a decodable JPEG.
  bool Decode(const std::byte* data, size_t n, int min_side, RgbImage* out, std::string* error);

 private:
  void* handle_;
};

}  // namespace stallscope

#endif  // STALLSCOPE_STORAGE_JPEG_H_
