#include "app/resolve.h"

namespace stallscope {

std::vector<Override> ParseSets(const std::vector<std::string>& sets) {
  std::vector<Override> out;
  for (const std::string& s : sets) out.push_back(ParseSetArgument(s));
  return out;
}

std::vector<Scenario> ResolveVariants(const std::string& path, std::vector<std::string> variants,
                                      const std::vector<std::string>& sets) {
  const ScenarioFile file = ScenarioFile::Load(path);
  const std::vector<Override> overrides = ParseSets(sets);
  if (variants.empty()) variants = file.variant_names();
  std::vector<Scenario> scenarios;
  for (const std::string& v : variants) scenarios.push_back(file.Resolve(v, overrides));
  return scenarios;
}

}  // namespace stallscope
