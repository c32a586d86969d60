#include "app/signals.h"

#include <cerrno>
#include <chrono>

#include "base/start_thread.h"

namespace stallscope {
namespace {

// A lock-free atomic: safe in a signal handler and between the handler's thread and the
// watcher (a volatile sig_atomic_t is only the former).
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void OnStopSignal(int sig) {
  const int saved_errno = errno;
  g_stop_signal.store(sig);
  errno = saved_errno;
}

}  // namespace

int StopSignal() { return g_stop_signal.load(); }

StopOnSignal::StopOnSignal() {
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  try {
    watcher_ = StartThread("the signal watcher thread", [this] {
      while (!done_.load()) {
        if (g_stop_signal) {
          std::lock_guard lock(mu_);
          if (pipeline_) pipeline_->RequestStop();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  } catch (const RunFailed&) {
    sigaction(SIGINT, &old_int_, nullptr);  // no destructor will put them back
    sigaction(SIGTERM, &old_term_, nullptr);
    throw;
  }
}

StopOnSignal::~StopOnSignal() {
  done_ = true;
  watcher_.join();
  if (!g_stop_signal) {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
}

void StopOnSignal::Attach(Pipeline* pipeline) {
  std::lock_guard lock(mu_);
  pipeline_ = pipeline;
}

}  // namespace stallscope
