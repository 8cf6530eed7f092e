// Parsing and formatting of rates, times, sizes and loss probabilities.
#include "util/units.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <initializer_list>
#include <limits>

namespace fabemu {
namespace {

// A decimal number as written, kept as integers so "1.5gbit" scales exactly; doubles would
// turn 0.1gbit into 100000000.00000001 bit/s.
struct Quantity {
  bool negative = false;
  unsigned __int128 whole = 0;
  uint64_t frac = 0;        // the digits after the point, trailing zeros dropped
  int frac_digits = 0;      // how many of them
  std::string_view number;  // the numeric text, e.g. "-1.5"
  std::string unit;         // the rest, lowercased, e.g. "gbit"
  bool is_zero() const { return whole == 0 && frac == 0; }
};

constexpr int kMaxFracDigits = 18;  // 10^18 still fits in a uint64_t

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

size_t skip_digits(std::string_view s, size_t i) {
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  return i;
}

// Splits "1.5 GBit" into the number 1.5 and the unit "gbit". `example` completes the error
// message so that it says what a valid value looks like.
Result<Quantity> split_quantity(std::string_view text, std::string_view example) {
  Quantity q;
  size_t i = 0;
  if (!text.empty() && text[0] == '-') {
    q.negative = true;
    i = 1;
  }
  size_t whole_end = skip_digits(text, i);
  if (whole_end == i) {
    if (text.empty()) return make_error("empty value; expected e.g. " + std::string(example));
    return make_error(quoted(text) + " is not a number; expected e.g. " + std::string(example));
  }
  for (; i < whole_end; ++i) {
    q.whole = q.whole * 10 + (text[i] - '0');
    if (q.whole > std::numeric_limits<uint64_t>::max()) {
      return make_error(quoted(text) + " is too large");
    }
  }
  if (i < text.size() && text[i] == '.') {
    size_t frac_end = skip_digits(text, ++i);
    std::string_view digits = text.substr(i, frac_end - i);
    i = frac_end;
    if (digits.empty()) {
      return make_error(quoted(text) + " has no digits after the decimal point");
    }
    while (!digits.empty() && digits.back() == '0') digits.remove_suffix(1);
    if (digits.size() > kMaxFracDigits) {
      return make_error(quoted(text) + " has more than 18 decimal places");
    }
    for (char c : digits) q.frac = q.frac * 10 + (c - '0');
    q.frac_digits = static_cast<int>(digits.size());
  }
  q.number = text.substr(0, i);
  while (i < text.size() && text[i] == ' ') ++i;  // "10 gbit" reads as "10gbit"
  for (; i < text.size(); ++i) {
    q.unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  }
  return q;
}

uint64_t pow10(int n) {
  uint64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

// q * mult as an exact integer. `what` names the base unit for the error ("bit/s", "ns").
Result<uint64_t> scale(const Quantity& q, uint64_t mult, std::string_view text,
                       std::string_view what) {
  unsigned __int128 frac_scaled = static_cast<unsigned __int128>(q.frac) * mult;
  uint64_t denom = pow10(q.frac_digits);
  if (frac_scaled % denom != 0) {
    return make_error(quoted(text) + " is not a whole number of " + std::string(what));
  }
  unsigned __int128 total = q.whole * mult + frac_scaled / denom;
  if (total > std::numeric_limits<uint64_t>::max()) {
    return make_error(quoted(text) + " is too large");
  }
  return static_cast<uint64_t>(total);
}

struct Unit {
  std::string_view name;
  uint64_t mult;
};

constexpr std::array<Unit, 5> kRateUnits = {{{"tbit", 1'000'000'000'000},
                                             {"gbit", 1'000'000'000},
                                             {"mbit", 1'000'000},
                                             {"kbit", 1'000},
                                             {"bit", 1}}};
constexpr std::array<Unit, 4> kTimeUnits = {
    {{"s", 1'000'000'000}, {"ms", 1'000'000}, {"us", 1'000}, {"ns", 1}}};
constexpr std::array<Unit, 5> kSizeUnits = {
    {{"T", 1ull << 40}, {"G", 1ull << 30}, {"M", 1ull << 20}, {"K", 1ull << 10}, {"", 1}}};

// Writes value / mult with up to three decimals if that is exact, e.g. 1500 / 1000 = "1.5".
bool format_exact(uint64_t value, uint64_t mult, std::string& out) {
  uint64_t whole = value / mult;
  uint64_t rem = value % mult;  // rem * 1000 cannot overflow: every mult is at most 2^40
  if ((rem * 1000) % mult != 0) return false;
  out = std::to_string(whole);
  if (rem != 0) {
    std::string frac = std::to_string(rem * 1000 / mult);
    frac.insert(0, 3 - frac.size(), '0');
    while (frac.back() == '0') frac.pop_back();
    out += "." + frac;
  }
  return true;
}

template <size_t N>
std::string format_with(uint64_t value, const std::array<Unit, N>& units) {
  std::string out;
  for (const Unit& u : units) {
    if (value >= u.mult && format_exact(value, u.mult, out)) return out + std::string(u.name);
  }
  return std::to_string(value) + std::string(units.back().name);
}

}  // namespace

Result<uint64_t> parse_rate(std::string_view text) {
  auto q = split_quantity(text, "25gbit");
  if (!q) return q.error();
  if (q->negative) return make_error("rate " + quoted(text) + " is negative; it must be > 0");
  uint64_t mult = 0;
  if (q->unit.empty()) mult = 1;
  for (const Unit& u : kRateUnits) {
    if (q->unit == u.name) mult = u.mult;
  }
  if (mult == 0) {
    return make_error("unknown rate unit '" + q->unit + "' in " + quoted(text) +
                      "; valid: bit, kbit, mbit, gbit, tbit (bit/s, k = 1000), e.g. 25gbit");
  }
  if (q->is_zero()) return make_error("rate must be > 0, got " + quoted(text));
  return scale(*q, mult, text, "bit/s");
}

Result<uint64_t> parse_time_ns(std::string_view text) {
  auto q = split_quantity(text, "20us");
  if (!q) return q.error();
  if (q->negative) return make_error("time " + quoted(text) + " is negative");
  if (q->unit.empty()) {
    if (q->is_zero()) return uint64_t{0};
    return make_error(quoted(text) + " needs a unit: ns, us, ms, s (e.g. 20us)");
  }
  if (q->unit == "µs") q->unit = "us";
  for (const Unit& u : kTimeUnits) {
    if (q->unit == u.name) return scale(*q, u.mult, text, "nanoseconds");
  }
  return make_error("unknown time unit '" + q->unit + "' in " + quoted(text) +
                    "; valid: ns, us, ms, s (e.g. 20us)");
}

Result<uint64_t> parse_size_bytes(std::string_view text) {
  auto q = split_quantity(text, "64K");
  if (!q) return q.error();
  if (q->negative) return make_error("size " + quoted(text) + " is negative");
  // The prefix letter, then an optional "i", "ib" or "b" (already lowercased).
  std::string_view unit = q->unit;
  uint64_t mult = 1;
  if (!unit.empty() && unit != "b") {
    mult = 0;
    for (const Unit& u : kSizeUnits) {
      if (!u.name.empty() && std::tolower(u.name[0]) == unit[0]) mult = u.mult;
    }
    std::string_view rest = unit.substr(1);
    if (rest != "" && rest != "i" && rest != "ib" && rest != "b") mult = 0;
  }
  if (mult == 0) {
    return make_error("unknown size unit '" + q->unit + "' in " + quoted(text) +
                      "; valid: K, M, G, T (K = 1024 bytes, optionally followed by i, iB or B) "
                      "or plain bytes, e.g. 64K");
  }
  return scale(*q, mult, text, "bytes");
}

Result<double> parse_loss(std::string_view text) {
  auto q = split_quantity(text, "0.5%");
  if (!q) return q.error();
  if (q->negative) return make_error("loss " + quoted(text) + " is negative");
  if (!q->unit.empty() && q->unit != "%") {
    return make_error("unknown loss unit '" + q->unit + "' in " + quoted(text) +
                      "; valid: a percentage like 0.5% or a fraction 0..1 like 0.005");
  }
  double value = 0;
  auto [end, ec] = std::from_chars(q->number.data(), q->number.data() + q->number.size(), value);
  if (ec != std::errc() || end != q->number.data() + q->number.size()) {
    return make_error(quoted(text) + " is not a number");
  }
  if (q->unit == "%") {
    if (value > 100) {
      return make_error("loss " + quoted(text) + " is above 100%; valid: 0%..100% or 0..1");
    }
    return value / 100;
  }
  if (value > 1) {
    return make_error("loss " + quoted(text) + " is above 1; a plain number is a fraction 0..1, " +
                      "write " + std::string(q->number) + "% for a percentage");
  }
  return value;
}

std::string format_rate(uint64_t bps) {
  return format_with(bps, kRateUnits);
}

std::string format_time_ns(uint64_t ns) {
  return format_with(ns, kTimeUnits);
}

std::string format_size(uint64_t bytes) {
  return format_with(bytes, kSizeUnits);
}

namespace {

// v in the largest of units[0] (v's own), units[1] (v / 1000), ... that keeps it under 1000,
// with 3 significant digits: "1.27ms", "346 Gbit/s".
std::string short_figure(double v, std::initializer_list<const char*> units, const char* space) {
  const char* unit = *units.begin();
  for (auto next = units.begin() + 1; next != units.end() && v >= 1000; ++next) {
    v /= 1000;
    unit = *next;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%s%s", v, space, unit);
  return buf;
}

}  // namespace

std::string format_time_short(uint64_t ns) {
  return short_figure(double(ns), {"ns", "us", "ms", "s"}, "");
}

std::string printf_string(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string format_rate_short(double bps) {
  return short_figure(bps, {"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"}, " ");
}

}  // namespace fabemu
