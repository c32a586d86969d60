#include "base/units.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace stallscope {
namespace {

// Splits "1.5GiB" into 1.5 and "GiB". Returns nullopt when there is no leading number.
std::optional<std::pair<double, std::string_view>> SplitNumber(std::string_view t) {
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || !std::isfinite(value)) return std::nullopt;
  std::string_view unit(end, t.data() + t.size() - end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return std::make_pair(value, unit);
}

std::optional<double> SizeUnit(std::string_view u) {
  if (u.empty() || u == "B") return 1.0;
  if (u == "kB" || u == "KB") return 1e3;
  if (u == "MB") return 1e6;
  if (u == "GB") return 1e9;
  if (u == "TB") return 1e12;
  if (u == "PB") return 1e15;
  if (u == "KiB") return 1024.0;
  if (u == "MiB") return 1048576.0;
  if (u == "GiB") return 1073741824.0;
  if (u == "TiB") return 1099511627776.0;
  if (u == "PiB") return 0x1p50;
  return std::nullopt;
}

}  // namespace

std::optional<double> ParseNumber(const std::string& text) {
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || !end || *end != '\0') return std::nullopt;
  return x;
}

std::optional<double> ParseSize(std::string_view text) {
  const auto split = SplitNumber(text);
  if (!split) return std::nullopt;
  const auto unit = SizeUnit(split->second);
  if (!unit) return std::nullopt;
  return split->first * *unit;
}

std::optional<double> ParseDuration(std::string_view text) {
  const auto split = SplitNumber(text);
  if (!split) return std::nullopt;
  const auto [v, u] = *split;
  if (u.empty()) return v == 0 ? std::optional<double>(0.0) : std::nullopt;
  // Divided, not multiplied by 1e-6: "100us" is then the double nearest 100e-6, the same
  // value as the literal a default is written with.
  if (u == "ns") return v / 1e9;
  if (u == "us" || u == "µs") return v / 1e6;
  if (u == "ms") return v / 1e3;
  if (u == "s") return v;
  if (u == "m" || u == "min") return v * 60;
  if (u == "h") return v * 3600;
  return std::nullopt;
}

std::optional<double> ParseRate(std::string_view text) {
  const auto split = SplitNumber(text);
  if (!split) return std::nullopt;
  auto [v, u] = *split;
  if (v == 0 && u.empty()) return 0.0;
  if (u.size() < 2 || u.substr(u.size() - 2) != "/s") return std::nullopt;
  const auto unit = SizeUnit(u.substr(0, u.size() - 2));
  if (!unit || u.size() == 2) return std::nullopt;  // "/s" alone has no size unit
  return v * *unit;
}

std::string FormatDuration(double s) {
  const double a = std::fabs(s);
  if (a >= 1.0) return fmt::format("{:.2f} s", s);
  if (a >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

std::string FormatBytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

std::string FormatRate(double b) { return FormatBytes(b) + "/s"; }

std::string ExactSize(uint64_t b) {
  static constexpr std::pair<uint64_t, const char*> kUnits[] = {{1ULL << 50, "PiB"},
                                                                {1ULL << 40, "TiB"},
                                                                {1ULL << 30, "GiB"},
                                                                {1ULL << 20, "MiB"},
                                                                {1ULL << 10, "KiB"}};
  for (const auto& [unit, name] : kUnits) {
    if (b >= unit && b % unit == 0) return fmt::format("{}{}", b / unit, name);
  }
  return fmt::format("{}B", b);
}

std::string ExactRate(double bytes_per_second) {
  if (!(bytes_per_second >= 0 && bytes_per_second < 9e18)) {  // past int64: as it is
    return fmt::format("{:.0f}B/s", bytes_per_second);
  }
  const auto b = static_cast<uint64_t>(std::llround(bytes_per_second));
  static constexpr std::pair<uint64_t, const char*> kUnits[] = {{1000000000000000ULL, "PB"},
                                                                {1000000000000ULL, "TB"},
                                                                {1000000000ULL, "GB"},
                                                                {1000000ULL, "MB"},
                                                                {1000ULL, "kB"}};
  for (const auto& [unit, name] : kUnits) {
    if (b >= unit && b % unit == 0) return fmt::format("{}{}/s", b / unit, name);
  }
  return fmt::format("{}B/s", b);
}

std::string FormatBinaryBytes(double b) {
  if (b >= 0x1p60) return fmt::format("{:.2f} EiB", b / 0x1p60);
  if (b >= 0x1p50) return fmt::format("{:.2f} PiB", b / 0x1p50);
  if (b >= 0x1p40) return fmt::format("{:.2f} TiB", b / 0x1p40);
  if (b >= 1073741824.0) return fmt::format("{:.2f} GiB", b / 1073741824.0);
  if (b >= 1048576.0) return fmt::format("{:.1f} MiB", b / 1048576.0);
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
}

}  // namespace stallscope
