// Grids: the points of a sweep, one scenario run (or simulated) at every point of a grid of
// key values.
//
// `--grid KEY=V1,V2,...` names a scenario key (the dotted keys of --set) and its values; several
// grids make a cartesian product, the first key varying slowest. Values are split on commas
// outside brackets and braces, so `--grid 'cache.tiers=[],[{kind: memory, capacity: 1GiB}]'`
// is two values. Each point is applied as --set overrides, so a key that does not exist is the
// scenario loader's error naming it (exit 2).
//
// Thread-safety: pure functions.
#ifndef STALLSCOPE_CONFIG_GRID_H_
#define STALLSCOPE_CONFIG_GRID_H_

#include <string>
#include <vector>

#include "config/scenario.h"

namespace stallscope {

struct GridAxis {
  std::string key;
  std::vector<std::string> values;
};

// Parses one --grid argument. Throws ScenarioError naming it when malformed.
GridAxis ParseGridArgument(const std::string& argument);

// Every point of the product, each as (key, value) pairs in axis order.
std::vector<std::vector<std::pair<std::string, std::string>>> GridPoints(
    const std::vector<GridAxis>& axes);

}  // namespace stallscope

#endif  // STALLSCOPE_CONFIG_GRID_H_
