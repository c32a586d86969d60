// Names of enum values, as scenario files and reports spell them: one table per enum, read by
// the parser (config/) and by everything that prints a value.
//
//   constexpr NameTable<Color, 2> kColorNames = {{{Color::kRed, "red"}, {Color::kBlue, "blue"}}};
//   NameOf(kColorNames, Color::kRed) == "red";  ValueOf(kColorNames, "blue") == Color::kBlue
//
// Thread-safety: constants and pure functions.
#ifndef STALLSCOPE_BASE_NAMES_H_
#define STALLSCOPE_BASE_NAMES_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace stallscope {

template <typename E, size_t N>
using NameTable = std::array<std::pair<E, const char*>, N>;

template <typename E, size_t N>
constexpr const char* NameOf(const NameTable<E, N>& table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "?";
}

template <typename E, size_t N>
constexpr std::optional<E> ValueOf(const NameTable<E, N>& table, std::string_view name) {
  for (const auto& [v, n] : table) {
    if (name == n) return v;
  }
  return std::nullopt;
}

// "a | b | c", for messages.
template <typename E, size_t N>
std::string Choices(const NameTable<E, N>& table) {
  std::string out;
  for (const auto& [v, n] : table) out += (out.empty() ? "" : " | ") + std::string(n);
  return out;
}

}  // namespace stallscope

#endif  // STALLSCOPE_BASE_NAMES_H_
