// Reading a scenario's YAML: a Section is one mapping of the document that knows its key path
// and the Context (file, overrides) of its values, reads typed values (whole numbers, sizes,
// durations, rates, enum names) and fails with file:line:column, key path and the problem —
// or the --set argument that brought the value. Finish() names the first unknown key, with a
// "did you mean" when one is close.
//
// Thread-safety: one parse per thread; nothing is shared.
#ifndef STALLSCOPE_CONFIG_YAML_SECTION_H_
#define STALLSCOPE_CONFIG_YAML_SECTION_H_

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/names.h"
#include "base/units.h"
#include "config/scenario.h"

namespace stallscope::config {

// Levenshtein distance (for "did you mean").
size_t EditDistance(const std::string& a, const std::string& b);
std::string Join(const std::vector<std::string>& v, const char* sep);
// How a message shows a node: 'scalar', a list, a mapping, nothing.
std::string Show(const YAML::Node& n);

// Where values came from, for messages.
struct Context {
  std::string file;
  const std::vector<Override>* overrides = nullptr;
  std::vector<ScenarioKey>* keys = nullptr;  // when set, every typed read is noted here

  // Notes a key the parser read (the first read of a path wins).
  void Note(const std::string& path, std::string type, std::string range, std::string value) const {
    if (!keys) return;
    for (const ScenarioKey& k : *keys) {
      if (k.path == path) return;
    }
    keys->push_back({path, std::move(type), std::move(range), std::move(value)});
  }

  const Override* OverrideFor(const std::string& path, bool command_line) const {
    if (!overrides) return nullptr;
    const Override* best = nullptr;
    for (const Override& o : *overrides) {
      const bool from_set = o.origin.rfind("--set", 0) == 0;
      if (from_set != command_line) continue;
      if (path == o.key || path.rfind(o.key + ".", 0) == 0) best = &o;  // last one wins
    }
    return best;
  }

  std::string Where(const YAML::Node& node, const std::string& path) const {
    if (const Override* o = OverrideFor(path, true)) return o->origin;
    if (node.IsDefined() && node.Mark().line >= 0) {
      return fmt::format("{}:{}:{}", file, node.Mark().line + 1, node.Mark().column + 1);
    }
    if (const Override* o = OverrideFor(path, false)) return o->origin;
    return file;
  }

  [[noreturn]] void Fail(const YAML::Node& node, const std::string& path,
                         const std::string& problem) const {
    throw ScenarioError(fmt::format("{}: {}: {}", Where(node, path), path, problem));
  }
};

// One mapping of the document; records which keys were read so Finish() can name the rest.
class Section {
 public:
  Section(const Context& ctx, const YAML::Node& node, std::string path)
      : ctx_(ctx), node_(node), path_(std::move(path)) {
    if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
      ctx_.Fail(node_, path_, "expected a mapping of keys, got " + Show(node_));
    }
  }

  // The raw node for `key` (undefined when absent).
  YAML::Node Get(const std::string& key) {
    seen_.push_back(key);
    if (!node_.IsDefined() || !node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& n = node_;
    return n[key];
  }
  std::string Path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const Context& ctx() const { return ctx_; }
  const YAML::Node& node() const { return node_; }

  template <typename T>
  T Integer(const std::string& key, T def, T min, T max = std::numeric_limits<T>::max()) {
    const T v = ReadInteger(key, def, min, max);
    ctx_.Note(Path(key), IntegerType<T>(), fmt::format("{}..{}", min, max), std::to_string(v));
    return v;
  }

  double Number(const std::string& key, double def, double min, double max) {
    const double v = ReadNumber(key, def, min, max);
    ctx_.Note(Path(key), "number", fmt::format("{:g}..{:g}", min, max), fmt::format("{:g}", v));
    return v;
  }

  // positive: zero is refused too.
  uint64_t Size(const std::string& key, uint64_t def, bool positive) {
    const YAML::Node n = Scalar(key);
    const uint64_t v = n.IsDefined() ? SizeOf(n, Path(key), positive) : def;
    ctx_.Note(Path(key), "size", positive ? ">0" : ">=0", std::to_string(v));
    return v;
  }
  uint64_t SizeOf(const YAML::Node& n, const std::string& path, bool positive) const {
    const auto v = ParseSize(n.Scalar());
    if (!v) {
      ctx_.Fail(n, path,
                "expected a size such as 4096, 112KiB, 4MB or 1.5GiB (B, kB, MB, GB, TB, PB, "
                "KiB, MiB, GiB, TiB, PiB), got " +
                    Show(n));
    }
    if (*v < 0) ctx_.Fail(n, path, "a size cannot be negative, got " + Show(n));
    if (positive && *v < 1) ctx_.Fail(n, path, "must be a positive size, got " + Show(n));
    // 2^63 bytes (8 EiB): beyond any storage, and far from uint64's end, so products of a
    // size and a small count cannot wrap unnoticed.
    if (*v >= 0x1p63) ctx_.Fail(n, path, "is too large (at most 8 EiB), got " + Show(n));
    return static_cast<uint64_t>(*v + 0.5);
  }

  // Durations are at most kMaxDuration (a week): longer ones have no use inside one run, and
  // a bound keeps every conversion to clock ticks exact.
  static constexpr double kMaxDuration = 7 * 24 * 3600;
  double Duration(const std::string& key, double def, bool positive = false) {
    const YAML::Node n = Scalar(key);
    double v = def;
    if (n.IsDefined()) {
      const auto parsed = ParseDuration(n.Scalar());
      if (!parsed) {
        ctx_.Fail(n, Path(key),
                  "expected a duration such as 200us, 5ms, 1.5s or 2m, got " + Show(n));
      }
      v = *parsed;
      if (v < 0) ctx_.Fail(n, Path(key), "a duration cannot be negative, got " + Show(n));
      if (positive && v <= 0) ctx_.Fail(n, Path(key), "must be a positive duration");
      if (v > kMaxDuration) {
        ctx_.Fail(n, Path(key), "must be at most a week (168h), got " + Show(n));
      }
    }
    ctx_.Note(Path(key), "duration", positive ? ">0, <=168h" : ">=0, <=168h",
              fmt::format("{:g}s", v));
    return v;
  }

  // positive: zero (unlimited) is refused too.
  double Rate(const std::string& key, double def, bool positive = false) {
    const YAML::Node n = Scalar(key);
    double v = def;
    if (n.IsDefined()) {
      const auto parsed = ParseRate(n.Scalar());
      if (!parsed || !std::isfinite(*parsed)) {
        ctx_.Fail(n, Path(key),
                  "expected a rate such as 400MB/s or 2GiB/s (0 = unlimited), got " + Show(n));
      }
      v = *parsed;
      if (v < 0) ctx_.Fail(n, Path(key), "a rate cannot be negative, got " + Show(n));
      if (positive && v <= 0) {
        ctx_.Fail(n, Path(key),
                  "must be a positive rate (no 'unlimited' here; write a large one such as "
                  "1TB/s)");
      }
    }
    ctx_.Note(Path(key), "rate", positive ? ">0" : ">=0 (0: unlimited)", fmt::format("{:g}B/s", v));
    return v;
  }

  bool Bool(const std::string& key, bool def) {
    const YAML::Node n = Scalar(key);
    bool v = def;
    if (n.IsDefined() && !YAML::convert<bool>::decode(n, v)) {
      ctx_.Fail(n, Path(key), "expected true or false, got " + Show(n));
    }
    ctx_.Note(Path(key), "bool", "true|false", v ? "true" : "false");
    return v;
  }

  // An enum value by its name in `table` (base/names.h).
  template <typename E, size_t N>
  E Enum(const std::string& key, E def, const NameTable<E, N>& table) {
    const YAML::Node n = Scalar(key);
    const E v = n.IsDefined() ? EnumOf(n, Path(key), table) : def;
    ctx_.Note(Path(key), "enum", Choices(table), NameOf(table, v));
    return v;
  }
  template <typename E, size_t N>
  E EnumOf(const YAML::Node& n, const std::string& path, const NameTable<E, N>& table) const {
    const std::optional<E> v = ValueOf(table, n.Scalar());
    if (!v) ctx_.Fail(n, path, "expected one of " + Choices(table) + ", got " + Show(n));
    return *v;
  }

  std::string String(const std::string& key, const std::string& def) {
    const YAML::Node n = Scalar(key);
    std::string v = n.IsDefined() ? n.Scalar() : def;
    ctx_.Note(Path(key), "string", "", v.empty() ? "\"\"" : v);
    return v;
  }

  // Fails on the first key that was never read.
  void Finish() const {
    if (!node_.IsDefined() || !node_.IsMap()) return;
    for (const auto& kv : node_) {
      const std::string key = kv.first.Scalar();
      if (std::find(seen_.begin(), seen_.end(), key) != seen_.end()) continue;
      std::string hint;
      size_t best = 3;
      for (const std::string& k : seen_) {
        const size_t d = EditDistance(key, k);
        if (d < best) {
          best = d;
          hint = fmt::format(" (did you mean '{}'?)", k);
        }
      }
      ctx_.Fail(kv.first, Path(key),
                "unknown key" + hint + "; known keys here: " + Join(seen_, ", "));
    }
  }

 private:
  template <typename T>
  static const char* IntegerType() {
    if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
    if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
    if constexpr (std::is_same_v<T, int64_t>) return "int64";
    return "integer";
  }

  template <typename T>
  T ReadInteger(const std::string& key, T def, T min, T max) {
    const YAML::Node n = Scalar(key);
    if (!n.IsDefined()) return def;
    const std::string& s = n.Scalar();
    // Unsigned text is read as unsigned, so uint64's whole range parses.
    const bool negative = !s.empty() && s[0] == '-';
    long long sv = 0;
    unsigned long long uv = 0;
    const auto [end, ec] = negative ? std::from_chars(s.data(), s.data() + s.size(), sv)
                                    : std::from_chars(s.data(), s.data() + s.size(), uv);
    if (ec == std::errc::result_out_of_range && !negative) {
      ctx_.Fail(n, Path(key),
                fmt::format("is too large (at most {})", std::numeric_limits<T>::max()));
    }
    if (ec != std::errc() || end != s.data() + s.size()) {
      ctx_.Fail(n, Path(key), "expected a whole number, got " + Show(n));
    }
    if (negative ? (!std::is_signed_v<T> || std::cmp_less(sv, min)) : std::cmp_less(uv, min)) {
      ctx_.Fail(n, Path(key), fmt::format("must be at least {}, got {}", min, s));
    }
    if (!negative && std::cmp_greater(uv, std::numeric_limits<T>::max())) {
      ctx_.Fail(n, Path(key),
                fmt::format("is too large (at most {})", std::numeric_limits<T>::max()));
    }
    if (!negative && std::cmp_greater(uv, max)) {
      ctx_.Fail(n, Path(key), fmt::format("must be at most {}, got {}", max, s));
    }
    return negative ? static_cast<T>(sv) : static_cast<T>(uv);
  }

  double ReadNumber(const std::string& key, double def, double min, double max) {
    const YAML::Node n = Scalar(key);
    if (!n.IsDefined()) return def;
    double v = 0;
    const std::string& s = n.Scalar();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || std::isnan(v)) {
      ctx_.Fail(n, Path(key), "expected a number, got " + Show(n));
    }
    if (!(v >= min && v <= max)) {
      ctx_.Fail(n, Path(key), fmt::format("must be between {:g} and {:g}, got {}", min, max, s));
    }
    return v;
  }

  YAML::Node Scalar(const std::string& key) {
    YAML::Node n = Get(key);
    if (!n.IsDefined()) return n;
    if (!n.IsScalar()) ctx_.Fail(n, Path(key), "expected a single value, got " + Show(n));
    return n;
  }

  const Context& ctx_;
  const YAML::Node node_;
  const std::string path_;
  std::vector<std::string> seen_;
};

}  // namespace stallscope::config

#endif  // STALLSCOPE_CONFIG_YAML_SECTION_H_
