// ProgressLine: a one-line live display of a run on a terminal (variant, epoch, step,
// samples/s, idle so far), redrawn four times a second on stderr from its own thread, and
// erased when the variant ends. Disabled, it does nothing (no TTY, or --quiet).
//
// Thread-safety: Start() and Stop() from one thread; the display thread only reads the
// pipeline's LiveCounters (atomics).
#ifndef STALLSCOPE_APP_PROGRESS_H_
#define STALLSCOPE_APP_PROGRESS_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "pipeline/pipeline.h"

namespace stallscope {

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  ~ProgressLine() { Stop(); }

  // REQUIRES: `pipeline` outlives the display (until Stop()).
  void Start(const std::string& variant, const Pipeline& pipeline, uint32_t epochs);
  void Stop();

 private:
  const bool enabled_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace stallscope

#endif  // STALLSCOPE_APP_PROGRESS_H_
