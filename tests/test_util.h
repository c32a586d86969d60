// Helpers shared by the integration tests: a scenario from YAML text, run on the emulated
// device, and a scratch directory that removes itself.
#ifndef STALLSCOPE_TESTS_TEST_UTIL_H_
#define STALLSCOPE_TESTS_TEST_UTIL_H_

#include <unistd.h>

#include <filesystem>
#include <string>

#include "app/runner.h"
#include "config/scenario.h"
#include "gpu/emulated_device.h"
#include "tests/timing.h"

namespace stallscope::testing {

inline Scenario ScenarioFromYaml(const std::string& yaml, const std::string& variant = "base") {
  return ScenarioFile::Parse(yaml, "test.yaml").Resolve(variant);
}

inline VariantResult RunYaml(const std::string& yaml, const std::string& variant = "base") {
  const Scenario s = ScenarioFromYaml(yaml, variant);
  auto storage = MakeStorage(s, /*quiet=*/true);
  EmulatedDevice device(s.gpu.step_time);
  return RunVariant(s, *storage, device, RunHooks{.quiet = true});
}

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() /
              ("stallscope-" + tag + "-" + std::to_string(getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace stallscope::testing

#endif  // STALLSCOPE_TESTS_TEST_UTIL_H_
