// Parsing and formatting of the quantities a scenario or a command line names: rates, times,
// sizes and loss probabilities.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

namespace fabemu {

// Rates are SI decimal, like tc: "25gbit" = 25 * 10^9 bit/s. Units: bit, kbit, mbit, gbit,
// tbit (case-insensitive); a plain integer is bit/s. Fractions are fine when the result is a
// whole number of bit/s ("1.5gbit"). The result is > 0.
Result<uint64_t> parse_rate(std::string_view text);

// Times in nanoseconds. Units: ns, us (or µs), ms, s. A plain "0" is allowed; any other plain
// number is an error, since "20" could mean any of them.
Result<uint64_t> parse_time_ns(std::string_view text);

// Sizes in bytes, binary like nccl-tests and cgroups: K = 1024, M = 1024^2, G = 1024^3,
// T = 1024^4. Each may be followed by "i", "iB" or "B" ("4K" = "4KiB" = "4KB" = 4096); the
// suffix is case-insensitive. A plain integer (or "512B") is bytes.
Result<uint64_t> parse_size_bytes(std::string_view text);

// A loss probability as a fraction 0..1: "0.5%" = 0.005, "0.01" = 0.01.
Result<double> parse_loss(std::string_view text);

// The shortest exact spelling the parsers above read back to the same value, with at most
// three decimals: format_rate(1500000000) = "1.5gbit", format_time_ns(1500000) = "1.5ms",
// format_size(16 << 20) = "16M". Values with no such spelling use the base unit.
std::string format_rate(uint64_t bps);
std::string format_time_ns(uint64_t ns);

// Now on the real-time clock, in ns since the epoch: what machines of a lab across machines
// agree on a common start by.
inline int64_t realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
// Seconds of the monotonic clock since `t`.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
std::string format_size(uint64_t bytes);
// Three significant digits in the largest unit below the value, for people: "16.8ms", "262us".
std::string format_time_short(uint64_t ns);
// The same for rates: "23 Mbit/s", "398 Gbit/s".
std::string format_rate_short(double bps);

// printf into a string (up to 511 characters), for tables.
std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace fabemu
