// Parsing and printing of sizes, durations and rates, exactly as scenario files write them.
//
//   sizes:     4096, 4KiB, 1MB, 1.5GiB  (B, kB/KB, MB, GB, TB, PB = powers of 10; KiB, MiB, GiB,
//              TiB, PiB = powers of 2; a bare number is bytes)
//   durations: 200us, 5ms, 1.5s, 2m, 1h (also ns, µs); a bare 0 is zero; other bare numbers
//              are refused because their unit would be a guess
//   rates:     400MB/s, 2GiB/s (a size per second)
//
// Thread-safety: pure functions.
#ifndef STALLSCOPE_BASE_UNITS_H_
#define STALLSCOPE_BASE_UNITS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stallscope {

std::optional<double> ParseNumber(const std::string& text);  // a plain number, all of `text`
std::optional<double> ParseSize(std::string_view text);      // bytes (may be fractional)
std::optional<double> ParseDuration(std::string_view text);  // seconds
std::optional<double> ParseRate(std::string_view text);      // bytes per second

// "1.23 ms", "45.6 s", "800 us".
std::string FormatDuration(double seconds);
// Bytes with the decimal unit users compare with fio/dd: "112.5 MB".
std::string FormatBytes(double bytes);
// Bytes with the binary unit: "107.3 MiB".
std::string FormatBinaryBytes(double bytes);
// Bytes per second, decimal: "25.00 GB/s", "180.0 MB/s" (FormatBytes + "/s").
std::string FormatRate(double bytes_per_second);

// Values to paste into a scenario or --set that parse back to exactly the same number: the
// largest unit that divides the value without a remainder. "56MiB" (58,720,256), "4097B";
// rates in decimal units: "1866MB/s", "200GB/s", "1234567B/s" (a fractional rate rounds to
// whole bytes per second first).
std::string ExactSize(uint64_t bytes);
std::string ExactRate(double bytes_per_second);

}  // namespace stallscope

#endif  // STALLSCOPE_BASE_UNITS_H_
