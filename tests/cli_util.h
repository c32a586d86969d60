// The stallscope executable as a test drives it: run it (through the shell, or in the
// background), read its exit code, stdout and stderr; a fixture with a scratch directory and the
// bad-input expectation (exit 2, one line naming the problem, nothing on stdout).
// STALLSCOPE_BIN is the executable (tests/CMakeLists.txt).
#ifndef STALLSCOPE_TESTS_CLI_UTIL_H_
#define STALLSCOPE_TESTS_CLI_UTIL_H_

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "tests/test_util.h"

namespace stallscope::cli {

using testing::ScratchDir;

struct Result {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `command` through the shell, stdin empty.
inline Result Command(const std::string& command) {
  const std::string err_file =
      std::filesystem::temp_directory_path() / ("stallscope-cli-err-" + std::to_string(getpid()));
  const std::string cmd = command + " 2>" + err_file + " </dev/null";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(err_file);
  r.err.assign(std::istreambuf_iterator<char>(in), {});
  std::filesystem::remove(err_file);
  return r;
}

// Runs `stallscope ARGS` through the shell, prefixed by `prefix` (e.g. a privilege drop).
inline Result Stallscope(const std::string& args, const std::string& prefix = "") {
  return Command(prefix + " " + STALLSCOPE_BIN + " " + args);
}

// Starts ARGS (args[0] is the program) in the background, output discarded; returns its pid.
inline pid_t Spawn(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Waits `after` seconds, sends `sig` to `pid` and waits for it to end: its wait status (-1
// when waitpid failed) and the seconds it took to end after the signal.
struct Stopped {
  int status = -1;
  double seconds = 0;
};
inline Stopped SignalAfter(pid_t pid, double after, int sig) {
  std::this_thread::sleep_for(std::chrono::duration<double>(after));
  const auto t0 = std::chrono::steady_clock::now();
  kill(pid, sig);
  Stopped out;
  int status = 0;
  if (waitpid(pid, &status, 0) == pid) out.status = status;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// A command prefix under which permissions hold even for root: it drops the capabilities
// that let root read and write anything. Empty for other users.
inline std::string WithoutRootOverride() {
  return geteuid() == 0 ? "setpriv --bounding-set -dac_override,-dac_read_search" : "";
}

class Cli : public ::testing::Test {
 protected:
  Cli() : dir_("cli") {}
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_.path() / name).string();
    std::ofstream(path) << text;
    return path;
  }
  // Expects exit code 2, one line on stderr containing `needle`, and nothing on stdout.
  void ExpectBadInput(const Result& r, const std::string& needle) {
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "") << "something ran";
  }
  ScratchDir dir_;
};

inline const char* kSmall = R"(name: small
dataset: {samples: 256, sample_size: 4KiB}
storage: {kind: simulated, bandwidth: 100MB/s}
loader: {batch_size: 16, prefetch: 2, workers: 1}
gpu: {step_time: 2ms}
run: {epochs: 1}
variants:
  a: {}
  b: {loader.prefetch: 0}
)";

}  // namespace stallscope::cli

#endif  // STALLSCOPE_TESTS_CLI_UTIL_H_
