#include "app/progress.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/start_thread.h"

namespace stallscope {

void ProgressLine::Start(const std::string& variant, const Pipeline& pipeline, uint32_t epochs) {
  if (!enabled_) return;
  Stop();
  stop_ = false;
  // A progress line is not worth failing a run for: a host that will start no more threads
  // runs without one.
  try {
    thread_ = StartThread("the progress line", [this, variant, &pipeline, epochs] {
      const LiveCounters& live = pipeline.live();
      const auto t0 = std::chrono::steady_clock::now();
      std::unique_lock lock(mu_);
      while (!cv_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stop_; })) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double span = live.last_step_end - live.first_step_start;
        const double idle = span > 0 ? std::max(0.0, 1 - live.busy_seconds / span) : 0;
        std::fprintf(
            stderr, "\r\033[K[%s] epoch %u/%u  step %llu/%llu  %.0f samples/s  idle %.1f%%",
            variant.c_str(), live.epoch.load() + 1, epochs,
            static_cast<unsigned long long>(live.steps.load()),
            static_cast<unsigned long long>(pipeline.total_steps()),
            elapsed > 0 ? static_cast<double>(live.samples.load()) / elapsed : 0.0, idle * 100);
        std::fflush(stderr);
      }
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
    });
  } catch (const RunFailed&) {
  }
}

void ProgressLine::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace stallscope
