#include "config/grid.h"

#include <fmt/format.h>

#include <algorithm>

namespace stallscope {

GridAxis ParseGridArgument(const std::string& argument) {
  const size_t eq = argument.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == argument.size()) {
    throw ScenarioError(fmt::format(
        "--grid {}: expected KEY=V1,V2,... (e.g. --grid loader.prefetch=0,2,8)", argument));
  }
  GridAxis axis;
  axis.key = argument.substr(0, eq);
  std::string cur;
  int depth = 0;
  for (char c : argument.substr(eq + 1)) {
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      axis.values.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  axis.values.push_back(cur);
  for (const std::string& v : axis.values) {
    if (v.empty()) {
      throw ScenarioError(fmt::format("--grid {}: an empty value for {}", argument, axis.key));
    }
  }
  if (depth != 0) throw ScenarioError(fmt::format("--grid {}: unbalanced brackets", argument));
  return axis;
}

std::vector<std::vector<std::pair<std::string, std::string>>> GridPoints(
    const std::vector<GridAxis>& axes) {
  std::vector<std::vector<std::pair<std::string, std::string>>> points(1);
  for (const GridAxis& a : axes) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& p : points) {
      for (const std::string& v : a.values) {
        next.push_back(p);
        next.back().emplace_back(a.key, v);
      }
    }
    points = std::move(next);
  }
  return points;
}

}  // namespace stallscope
