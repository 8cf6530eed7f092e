// Tests of rate, time, size and loss parsing and formatting.
#include "util/units.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace fabemu {
namespace {

// The error message of a failed parse, or "" when it unexpectedly succeeded.
template <typename T>
std::string error_of(const Result<T>& r) {
  return r ? "" : r.error().message;
}

TEST(ParseRate, SiUnitsAreDecimalAndCaseInsensitive) {
  EXPECT_EQ(*parse_rate("10gbit"), 10'000'000'000ull);
  EXPECT_EQ(*parse_rate("400Gbit"), 400'000'000'000ull);
  EXPECT_EQ(*parse_rate("100mbit"), 100'000'000ull);
  EXPECT_EQ(*parse_rate("64kbit"), 64'000ull);
  EXPECT_EQ(*parse_rate("800bit"), 800ull);
  EXPECT_EQ(*parse_rate("3tbit"), 3'000'000'000'000ull);
  EXPECT_EQ(*parse_rate("25GBIT"), 25'000'000'000ull);
  EXPECT_EQ(*parse_rate("10 gbit"), 10'000'000'000ull);
}

TEST(ParseRate, PlainIntegerIsBitsPerSecond) {
  EXPECT_EQ(*parse_rate("1000000"), 1'000'000ull);
}

TEST(ParseRate, FractionsScaleExactly) {
  EXPECT_EQ(*parse_rate("1.5gbit"), 1'500'000'000ull);
  EXPECT_EQ(*parse_rate("0.1gbit"), 100'000'000ull);  // a double would give ...00000001
  EXPECT_EQ(*parse_rate("2.50mbit"), 2'500'000ull);
  EXPECT_EQ(*parse_rate("1.000000000000000000000gbit"), 1'000'000'000ull);
  EXPECT_NE(error_of(parse_rate("1.5bit")).find("not a whole number of bit/s"), std::string::npos);
}

TEST(ParseRate, LargeRatesDoNotOverflow) {
  EXPECT_EQ(*parse_rate("800gbit"), 800'000'000'000ull);
  EXPECT_EQ(*parse_rate("18446744tbit"), 18'446'744'000'000'000'000ull);
  EXPECT_NE(error_of(parse_rate("18446745tbit")).find("too large"), std::string::npos);
  EXPECT_NE(error_of(parse_rate("99999999999999999999999bit")).find("too large"),
            std::string::npos);
}

TEST(ParseRate, RejectsZeroNegativeAndUnknownUnits) {
  EXPECT_NE(error_of(parse_rate("0")).find("rate must be > 0"), std::string::npos);
  EXPECT_NE(error_of(parse_rate("0gbit")).find("rate must be > 0"), std::string::npos);
  EXPECT_NE(error_of(parse_rate("-5gbit")).find("negative"), std::string::npos);
  std::string e = error_of(parse_rate("10gbps"));
  EXPECT_NE(e.find("unknown rate unit 'gbps'"), std::string::npos) << e;
  EXPECT_NE(e.find("valid: bit, kbit, mbit, gbit, tbit"), std::string::npos) << e;
  EXPECT_NE(error_of(parse_rate("")).find("empty"), std::string::npos);
  EXPECT_NE(error_of(parse_rate("gbit")).find("not a number"), std::string::npos);
  EXPECT_NE(error_of(parse_rate("1.gbit")).find("no digits after"), std::string::npos);
  EXPECT_FALSE(parse_rate("1e9"));
  EXPECT_FALSE(parse_rate("10gbit "));
}

TEST(ParseTime, Units) {
  EXPECT_EQ(*parse_time_ns("20ns"), 20ull);
  EXPECT_EQ(*parse_time_ns("2us"), 2'000ull);
  EXPECT_EQ(*parse_time_ns("2µs"), 2'000ull);
  EXPECT_EQ(*parse_time_ns("1.5ms"), 1'500'000ull);
  EXPECT_EQ(*parse_time_ns("2s"), 2'000'000'000ull);
  EXPECT_EQ(*parse_time_ns("0.5us"), 500ull);
  EXPECT_EQ(*parse_time_ns("0"), 0ull);
  EXPECT_EQ(*parse_time_ns("0ms"), 0ull);
}

TEST(ParseTime, PlainNumbersOtherThanZeroNeedAUnit) {
  std::string e = error_of(parse_time_ns("20"));
  EXPECT_NE(e.find("needs a unit: ns, us, ms, s"), std::string::npos) << e;
}

TEST(ParseTime, RejectsBadInput) {
  EXPECT_NE(error_of(parse_time_ns("2sec")).find("unknown time unit 'sec'"), std::string::npos);
  EXPECT_NE(error_of(parse_time_ns("-1ms")).find("negative"), std::string::npos);
  EXPECT_NE(error_of(parse_time_ns("0.5ns")).find("whole number of nanoseconds"),
            std::string::npos);
  EXPECT_NE(error_of(parse_time_ns("99999999999s")).find("too large"), std::string::npos);
  EXPECT_FALSE(parse_time_ns("us"));
}

TEST(ParseSize, BinaryUnits) {
  EXPECT_EQ(*parse_size_bytes("512"), 512ull);
  EXPECT_EQ(*parse_size_bytes("512B"), 512ull);
  EXPECT_EQ(*parse_size_bytes("64K"), 65'536ull);
  EXPECT_EQ(*parse_size_bytes("1M"), 1ull << 20);
  EXPECT_EQ(*parse_size_bytes("16M"), 16ull << 20);
  EXPECT_EQ(*parse_size_bytes("1G"), 1ull << 30);
  EXPECT_EQ(*parse_size_bytes("2T"), 2ull << 40);
  EXPECT_EQ(*parse_size_bytes("1.5K"), 1'536ull);
}

TEST(ParseSize, SuffixSpellingsAreSynonyms) {
  for (const char* s : {"4K", "4k", "4Ki", "4KiB", "4KB", "4kb", "4kib"}) {
    auto r = parse_size_bytes(s);
    ASSERT_TRUE(r) << s << ": " << r.error().message;
    EXPECT_EQ(*r, 4096ull) << s;
  }
}

TEST(ParseSize, RejectsBadInput) {
  std::string e = error_of(parse_size_bytes("64X"));
  EXPECT_NE(e.find("unknown size unit 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("K = 1024"), std::string::npos) << e;
  EXPECT_FALSE(parse_size_bytes("64KX"));
  EXPECT_FALSE(parse_size_bytes("64KiBB"));
  EXPECT_NE(error_of(parse_size_bytes("1.3K")).find("whole number of bytes"), std::string::npos);
  EXPECT_NE(error_of(parse_size_bytes("-1M")).find("negative"), std::string::npos);
  EXPECT_NE(error_of(parse_size_bytes("17000000T")).find("too large"), std::string::npos);
}

TEST(ParseLoss, PercentAndFraction) {
  EXPECT_DOUBLE_EQ(*parse_loss("0.5%"), 0.005);
  EXPECT_DOUBLE_EQ(*parse_loss("2%"), 0.02);
  EXPECT_DOUBLE_EQ(*parse_loss("100%"), 1.0);
  EXPECT_DOUBLE_EQ(*parse_loss("0.01"), 0.01);
  EXPECT_DOUBLE_EQ(*parse_loss("0"), 0.0);
  EXPECT_DOUBLE_EQ(*parse_loss("1"), 1.0);
}

TEST(ParseLoss, RejectsOutOfRange) {
  EXPECT_NE(error_of(parse_loss("150%")).find("above 100%"), std::string::npos);
  std::string e = error_of(parse_loss("1.5"));
  EXPECT_NE(e.find("above 1"), std::string::npos) << e;
  EXPECT_NE(e.find("1.5%"), std::string::npos) << e;  // suggests the percent spelling
  EXPECT_NE(error_of(parse_loss("-1%")).find("negative"), std::string::npos);
  EXPECT_NE(error_of(parse_loss("5pct")).find("unknown loss unit"), std::string::npos);
}

TEST(FormatRate, ShortestExactSpelling) {
  EXPECT_EQ(format_rate(25'000'000'000), "25gbit");
  EXPECT_EQ(format_rate(1'500'000'000), "1.5gbit");
  EXPECT_EQ(format_rate(800'000'000), "800mbit");
  EXPECT_EQ(format_rate(400'000'000'000), "400gbit");
  EXPECT_EQ(format_rate(2'000'000'000'000), "2tbit");
  EXPECT_EQ(format_rate(1'234'567), "1234.567kbit");
  EXPECT_EQ(format_rate(7), "7bit");
  EXPECT_EQ(format_rate(0), "0bit");
}

TEST(FormatTime, ShortestExactSpelling) {
  EXPECT_EQ(format_time_ns(2'000), "2us");
  EXPECT_EQ(format_time_ns(1'500'000), "1.5ms");
  EXPECT_EQ(format_time_ns(20), "20ns");
  EXPECT_EQ(format_time_ns(3'000'000'000), "3s");
  EXPECT_EQ(format_time_ns(1'001), "1.001us");
  EXPECT_EQ(format_time_ns(1'000'001), "1000.001us");
  EXPECT_EQ(format_time_ns(0), "0ns");
}

TEST(FormatSize, ShortestExactSpelling) {
  EXPECT_EQ(format_size(16ull << 20), "16M");
  EXPECT_EQ(format_size(64ull << 10), "64K");
  EXPECT_EQ(format_size(1ull << 30), "1G");
  EXPECT_EQ(format_size(1'536), "1.5K");
  EXPECT_EQ(format_size(512), "512");
  EXPECT_EQ(format_size(100'000), "100000");
}

// Whatever a formatter prints, the parser reads back to the same value: status output can be
// pasted into a scenario or a `link set` command.
TEST(Units, FormatThenParseRoundTrips) {
  for (uint64_t v : std::initializer_list<uint64_t>{
           1ull, 999ull, 1'000ull, 1'234'567ull, 1'500'000'000ull, 25'000'000'000ull,
           400'000'000'000ull, 123'456'789'012'345ull, UINT64_MAX}) {
    EXPECT_EQ(*parse_rate(format_rate(v)), v) << format_rate(v);
    EXPECT_EQ(*parse_time_ns(format_time_ns(v)), v) << format_time_ns(v);
    EXPECT_EQ(*parse_size_bytes(format_size(v)), v) << format_size(v);
  }
}

}  // namespace
}  // namespace fabemu
