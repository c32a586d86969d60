// libFuzzer target: scenario loading and --set overrides (tools/fuzz.sh builds and runs it).
//
// The input is a scenario file; lines starting with "#set " are also taken as --set
// arguments. Every variant is resolved with them. Bad input must end in ScenarioError (the
// one-line message with file, line, column and key); any other exception, a crash, a hang
// or a leak is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "config/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<stallscope::Override> sets;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#set ", 0) != 0) continue;
    try {
      sets.push_back(stallscope::ParseSetArgument(line.substr(5)));
    } catch (const stallscope::ScenarioError&) {
    }
  }
  try {
    const stallscope::ScenarioFile file = stallscope::ScenarioFile::Parse(text, "fuzz.yaml");
    for (const std::string& v : file.variant_names()) {
      try {
        (void)file.Resolve(v, sets);
      } catch (const stallscope::ScenarioError&) {
      }
    }
  } catch (const stallscope::ScenarioError&) {
  }
  return 0;
}
