// CPU preprocessing: the work each worker does per sample.
//
// `normalize` turns raw bytes into float32 in [0, 1] (x / 255), the usual first step of an
// image pipeline. `jpeg-decode` decodes, crops and normalizes an image (DecodeJpegSample). `cost`
// adds a calibrated amount of extra real computation per sample (a dependent integer hash chain,
// whose result is folded into the output so the compiler cannot drop it): the work really occupies
// a core, and contention between workers shows as it would with real decoding — unlike sleep(),
// which DLIO uses.
//
// Thread-safety: CpuBurner is immutable after construction and safe from any thread.
#ifndef STALLSCOPE_PIPELINE_PREPROCESS_H_
#define STALLSCOPE_PIPELINE_PREPROCESS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "storage/jpeg.h"

namespace stallscope {

// Writes n floats, out[i] = in[i] / 255.
void NormalizeBytes(const std::byte* in, size_t n, float* out);

// `jpeg-decode`, as torchvision's Resize(size * 256 / 224) + CenterCrop(size) + ToTensor +
// Normalize(ImageNet mean, std): decodes the JPEG (at the smallest DCT scale that still
// covers the resize), resamples the centre crop bilinearly (a plain copy when no resize is
// needed) and writes size × size × 3 floats, channel-major (CHW). Returns false with the
// reason for data that does not decode; `out` is then zeroed.
bool DecodeJpegSample(JpegDecoder& decoder, RgbImage& scratch, const std::byte* data, size_t n,
                      int size, float* out, std::string* error);

// `jpeg-decode` with `normalize_on: device`: the same decode and centre crop, written as
// size × size × 3 uint8 pixels, HWC, for the device to normalize. A resampled crop (images
// whose shorter side is not size × 256 / 224) is rounded to the nearest level. Returns false
// with the reason for data that does not decode; `out` is then zeroed.
bool DecodeJpegCrop(JpegDecoder& decoder, RgbImage& scratch, const std::byte* data, size_t n,
                    int size, uint8_t* out, std::string* error);

// Values per sample that DecodeJpegSample and DecodeJpegCrop write.
inline uint64_t JpegSampleFloats(int size) { return static_cast<uint64_t>(size) * size * 3; }

class CpuBurner {
 public:
  // Measures this machine's speed on the hash chain (takes ~20 ms).
  CpuBurner();
  // With a given speed in chain iterations per second (tests: a calibration that is off).
  explicit CpuBurner(double iterations_per_second) : rate_(iterations_per_second) {}
  // Computes until the calling thread has used `seconds` of CPU time (CLOCK_THREAD_CPUTIME_ID:
  // time preempted does not count); returns a value that depends on the work. Returns early
  // (within about 0.1 ms of work) once `cancel` is set.
  uint64_t Burn(double seconds, uint64_t salt, const std::atomic<bool>* cancel = nullptr) const;
  double iterations_per_second() const { return rate_; }

  // The process-wide instance, calibrated on first use.
  static const CpuBurner& Get();

 private:
  double rate_ = 0;
};

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_PREPROCESS_H_
