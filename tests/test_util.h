// Helpers shared by the integration tests: a scenario from YAML text, run on the emulated
// device, and a scratch directory that removes itself.
#ifndef STALLSCOPE_TESTS_TEST_UTIL_H_
#define STALLSCOPE_TESTS_TEST_UTIL_H_

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "app/runner.h"
#include "config/scenario.h"
#include "gpu/emulated_device.h"
#include "storage/content.h"
#include "storage/synthetic.h"
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

// What reached the device, row by row: each row's first 8 bytes name the sample (content is
// keyed by sample, so the word is unique), checked against the sampler's plan per epoch.
class RecordingDevice final : public Device {
 public:
  explicit RecordingDevice(const SyntheticDataset& d) {
    std::vector<std::byte> w(8);
    for (uint64_t id = 0; id < d.dataset.samples; ++id) {
      const uint64_t key = ContentKey(d.seed, id);
      FillContent(key, w, LabelOf(key, d.dataset.classes));
      uint64_t word;
      std::memcpy(&word, w.data(), 8);
      by_word_[word] = id;
    }
  }
  std::string name() const override { return "recording"; }
  void Prepare(uint64_t, uint32_t) override {}
  double CopyIn(int, const DeviceBatch& b) override {
    std::vector<int64_t> ids;
    for (uint32_t r = 0; r < b.samples; ++r) {
      uint64_t word;
      std::memcpy(&word, b.data + r * b.row_bytes, 8);
      auto it = by_word_.find(word);
      ids.push_back(it == by_word_.end() ? -1 : static_cast<int64_t>(it->second));
    }
    batches_.push_back(std::move(ids));
    return 0;
  }
  StepTiming Step(int, const DeviceBatch&, double earliest) override {
    return {earliest, earliest + 1e-4, 1e-4};
  }
  double nominal_step_seconds() const override { return 1e-4; }
  const std::vector<std::vector<int64_t>>& batches() const { return batches_; }

 private:
  std::map<uint64_t, uint64_t> by_word_;
  std::vector<std::vector<int64_t>> batches_;
};

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
