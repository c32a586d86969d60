// NVTX ranges for the pipeline's stages, so Nsight Systems users see fetch, preprocess,
// waiting for data, H2D and the step on their timeline. Without NVTX headers (no CUDA
// toolkit at build time) these compile to nothing. NVTX itself costs nearly nothing when no
// tool is attached: each call checks one pointer.
//
// Thread-safety: NVTX is thread-safe; ScopedRange is per thread (push/pop), FetchRange
// crosses threads (start on one, end on another).
#ifndef STALLSCOPE_PIPELINE_NVTX_H_
#define STALLSCOPE_PIPELINE_NVTX_H_

#include <cstdint>

#ifdef STALLSCOPE_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace stallscope::nvtx {

// Loads NVTX's function table now. Call before starting the threads that use it: NVTX fills
// the table lazily on the first call, and that first call racing another thread's first call
// is a data race ThreadSanitizer reports (harmless in practice, but not clean).
inline void Initialize() {
#ifdef STALLSCOPE_HAVE_NVTX
  nvtxInitialize(nullptr);
#endif
}

class ScopedRange {
 public:
  explicit ScopedRange(const char* name) {
#ifdef STALLSCOPE_HAVE_NVTX
    nvtxRangePushA(name);
#else
    (void)name;
#endif
  }
  ~ScopedRange() {
#ifdef STALLSCOPE_HAVE_NVTX
    nvtxRangePop();
#endif
  }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

// A process-wide range that may end on another thread (a batch's fetch).
inline uint64_t StartRange(const char* name) {
#ifdef STALLSCOPE_HAVE_NVTX
  return nvtxRangeStartA(name);
#else
  (void)name;
  return 0;
#endif
}
inline void EndRange(uint64_t id) {
#ifdef STALLSCOPE_HAVE_NVTX
  nvtxRangeEnd(id);
#else
  (void)id;
#endif
}

}  // namespace stallscope::nvtx

#endif  // STALLSCOPE_PIPELINE_NVTX_H_
