// Resolving a scenario file's variants with the command line's --set overrides, for every
// command that runs or simulates them. Everything is resolved before anything runs, so a bad
// variant name or key fails first (exit 2).
//
// Thread-safety: pure functions.
#ifndef STALLSCOPE_APP_RESOLVE_H_
#define STALLSCOPE_APP_RESOLVE_H_

#include <string>
#include <vector>

#include "config/scenario.h"

namespace stallscope {

// Parses each --set KEY=VALUE. Throws ScenarioError.
std::vector<Override> ParseSets(const std::vector<std::string>& sets);

// The named variants (all, when `variants` is empty) of the file at `path`, each with `sets`
// applied. Throws ScenarioError.
std::vector<Scenario> ResolveVariants(const std::string& path, std::vector<std::string> variants,
                                      const std::vector<std::string>& sets);

}  // namespace stallscope

#endif  // STALLSCOPE_APP_RESOLVE_H_
