// perf --json's reading of perftest's result table, and its real-fabric units under dilation.
#include <gtest/gtest.h>

#include "runtime/perf.h"

namespace fabemu {
namespace {

TEST(PerftestTable, ABandwidthTableIsReadByItsHeader) {
  const std::string out =
      " RDMA_Write BW Test\n"
      " Number of qps   : 1\t\tTransport type : IB\n"
      "-------------------------------------------------------------------------------------\n"
      " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
      " 65536      5000             9.05               9.04               0.017245\n"
      "-------------------------------------------------------------------------------------\n";
  const PerftestTable t = parse_perftest(out);
  ASSERT_EQ(t.columns, (std::vector<std::string>{"#bytes", "#iterations", "BW peak[Gb/sec]",
                                                 "BW average[Gb/sec]", "MsgRate[Mpps]"}));
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][0], 65536);
  EXPECT_DOUBLE_EQ(t.rows[0][3], 9.04);
}

TEST(PerftestTable, ALatencyTableWithOneSpaceBetweenColumnsAndSeveralRows) {
  const std::string out =
      " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
      "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
      " 2       1000          5.20           20.14        5.43     5.61     0.79     9.84   20.14\n"
      " 4       1000          5.30           21.00        5.50     5.70     0.80     9.90   "
      "21.00\n";
  const PerftestTable t = parse_perftest(out);
  ASSERT_EQ(t.columns.size(), 9u);
  EXPECT_EQ(t.columns[7], "99% percentile[usec]");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(t.rows[1][5], 5.70);
}

TEST(PerftestTable, UcxPerftestsFinalRow) {
  const std::string out =
      "|    Stage     | # iterations | 50.0%ile | average | overall |  average |  overall |\n"
      "[thread 0]               949      8.532  1062.390  1062.390       58.83      58.83  941  "
      "941\n"
      "Final:                  2000      9.109  5000.1  1300.5       12.5      48.06   200   769\n";
  const PerftestTable t = parse_perftest(out);
  ASSERT_EQ(t.columns.size(), 8u);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.columns[5], "BW overall[MB/sec]");
  EXPECT_DOUBLE_EQ(t.rows[0][5], 48.06);
  EXPECT_DOUBLE_EQ(real_value(t.columns[5], 48.06, 10), 480.6);
}

TEST(PerftestTable, NoTableNoColumns) {
  EXPECT_TRUE(parse_perftest("").columns.empty());
  EXPECT_TRUE(
      parse_perftest(" #bytes #iterations t_min[usec]\nCouldn't connect\n").columns.empty());
}

TEST(PerftestTable, RatesGrowAndTimesShrinkWithTheFactorCountsStay) {
  EXPECT_DOUBLE_EQ(real_value("BW average[Gb/sec]", 0.1, 1000), 100);
  EXPECT_DOUBLE_EQ(real_value("MsgRate[Mpps]", 0.002, 1000), 2);
  EXPECT_DOUBLE_EQ(real_value("t_avg[usec]", 5000, 1000), 5);
  EXPECT_DOUBLE_EQ(real_value("#bytes", 65536, 1000), 65536);
}

}  // namespace
}  // namespace fabemu
