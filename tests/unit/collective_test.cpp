// Tests of fabemu-collective's network-free half: layouts and bus factors, data patterns and
// their checks, options and environment, predictions, the measurement loop and the output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "collective/benchmark.h"
#include "collective/collective.h"
#include "collective/options.h"
#include "collective/pattern.h"
#include "collective/prediction.h"
#include "collective/report.h"
#include "util/json.h"

namespace fabemu::collective {
namespace {

template <typename T>
std::string error_of(const Result<T>& r) {
  return r ? "" : r.error().what();
}

// ---- layouts and bandwidth ----

TEST(CollectiveLayout, SizesAndCountsFollowNcclTests) {
  Layout ar = layout_of(Collective::AllReduce, 1 << 20, 8);
  EXPECT_EQ(ar.size, 1u << 20);
  EXPECT_EQ(ar.count, 262144u);
  EXPECT_EQ(ar.in_count, 262144u);
  EXPECT_EQ(ar.out_count, 262144u);
  EXPECT_EQ(ar.root(), -1);

  // allgather: size is the whole output, count one rank's block.
  Layout ag = layout_of(Collective::AllGather, 1 << 20, 8);
  EXPECT_EQ(ag.size, 1u << 20);
  EXPECT_EQ(ag.count, 32768u);
  EXPECT_EQ(ag.in_count, 32768u);
  EXPECT_EQ(ag.out_count, 262144u);

  // reducescatter: size is the whole input.
  Layout rs = layout_of(Collective::ReduceScatter, 1 << 20, 8);
  EXPECT_EQ(rs.in_count, 262144u);
  EXPECT_EQ(rs.out_count, 32768u);
  EXPECT_TRUE(rs.reduces());

  // alltoall: size is one rank's send buffer.
  Layout a2a = layout_of(Collective::AllToAll, 1 << 20, 8);
  EXPECT_EQ(a2a.in_count, 262144u);
  EXPECT_EQ(a2a.out_count, 262144u);
  EXPECT_EQ(a2a.block, 32768u);

  EXPECT_EQ(layout_of(Collective::Broadcast, 4096, 8).root(), 0);
}

TEST(CollectiveLayout, RoundsDownToWholeBlocksButKeepsOneElementPerBlock) {
  Layout ag = layout_of(Collective::AllGather, 4096, 3);  // 1024 floats / 3 ranks
  EXPECT_EQ(ag.block, 341u);
  EXPECT_EQ(ag.size, 341u * 3 * 4);
  EXPECT_EQ(layout_of(Collective::AllToAll, 4, 8).size, 8u * 4);  // 1 element per block
  EXPECT_EQ(layout_of(Collective::AllReduce, 6, 8).size, 4u);
  EXPECT_EQ(layout_of(Collective::AllReduce, 1, 8).count, 1u);
}

TEST(CollectiveBandwidth, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::ReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::Broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllReduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(gb_per_s(2'000'000'000, 2.0), 1.0);
}

TEST(CollectiveNames, ParsesCommaListsInOrderWithoutRepeats) {
  auto list = parse_collective_list("alltoall,allreduce,alltoall");
  ASSERT_TRUE(list) << error_of(list);
  EXPECT_EQ(*list, (std::vector<Collective>{Collective::AllToAll, Collective::AllReduce}));
  std::string e = error_of(parse_collective_list("allreduce,all_gather"));
  EXPECT_NE(e.find("unknown collective 'all_gather'"), std::string::npos) << e;
  EXPECT_NE(e.find("valid: allreduce, allgather"), std::string::npos) << e;
  EXPECT_FALSE(parse_collective_list(""));
  for (Collective c : kAllCollectives) EXPECT_EQ(*parse_collective(name_of(c)), c);
}

// ---- patterns and verification ----

// What a correct library hands `rank`, computed the slow way from every rank's input; sums
// in rank order, or in reverse to stand for a library that adds in another order.
std::vector<float> simulate(const Layout& l, int rank, uint32_t iteration, bool reverse = false,
                            int skip_rank = -1) {
  const int n = l.ranks;
  std::vector<std::vector<float>> in(n, std::vector<float>(l.in_count));
  for (int r = 0; r < n; ++r) fill_input(l, r, iteration, in[r]);
  std::vector<float> out(l.out_count, 0.0f);
  const uint64_t b = l.block;
  for (int k = 0; k < n; ++k) {
    const int r = reverse ? n - 1 - k : k;
    switch (l.collective) {
      case Collective::AllReduce:
        if (r == skip_rank) break;
        for (uint64_t i = 0; i < l.out_count; ++i) out[i] += in[r][i];
        break;
      case Collective::ReduceScatter:
        if (r == skip_rank) break;
        for (uint64_t i = 0; i < b; ++i) out[i] += in[r][rank * b + i];
        break;
      case Collective::AllGather:
        for (uint64_t j = 0; j < b; ++j) out[r * b + j] = in[r][j];
        break;
      case Collective::AllToAll:
        for (uint64_t j = 0; j < b; ++j) out[r * b + j] = in[r][rank * b + j];
        break;
      case Collective::Broadcast:
        if (r == kBroadcastRoot) out = in[r];
        break;
    }
  }
  return out;
}

TEST(CollectivePattern, CorrectResultsPassOnEveryRankAndWorldSize) {
  for (int n : {1, 2, 3, 5, 8, 13}) {
    for (Collective c : kAllCollectives) {
      const Layout l = layout_of(c, 4096, n);
      for (int rank : {0, n / 2, n - 1}) {
        for (uint32_t it : {0u, 7u}) {
          for (bool reverse : {false, true}) {
            Verification v = verify_output(l, rank, it, simulate(l, rank, it, reverse));
            EXPECT_EQ(v.wrong, 0u) << name_of(c) << " n=" << n << " rank=" << rank << " it=" << it
                                   << " first wrong " << v.first_index;
          }
        }
      }
    }
  }
}

TEST(CollectivePattern, OneCorruptedElementIsCaughtAndLocated) {
  for (Collective c : kAllCollectives) {
    const Layout l = layout_of(c, 4096, 4);
    std::vector<float> out = simulate(l, 1, 3);
    const uint64_t bad = l.out_count / 2;
    const float want = out[bad];
    out[bad] += 1.0f;
    Verification v = verify_output(l, 1, 3, out);
    EXPECT_EQ(v.wrong, 1u) << name_of(c);
    EXPECT_EQ(v.first_index, bad) << name_of(c);
    EXPECT_EQ(v.expected, want) << name_of(c);
    EXPECT_EQ(v.got, want + 1.0f) << name_of(c);
  }
}

TEST(CollectivePattern, StaleMisplacedAndIncompleteResultsFail) {
  const Layout ar = layout_of(Collective::AllReduce, 4096, 6);
  // The previous iteration's result left in the buffer.
  EXPECT_GE(verify_output(ar, 0, 5, simulate(ar, 0, 4)).wrong, ar.out_count * 99 / 100);
  // A rank's contribution missing: every input is >= 1, so every element is off.
  EXPECT_EQ(verify_output(ar, 0, 5, simulate(ar, 0, 5, false, 2)).wrong, ar.out_count);
  // Untouched output.
  std::vector<float> untouched(ar.out_count);
  poison(untouched);
  EXPECT_EQ(verify_output(ar, 0, 5, untouched).wrong, ar.out_count);

  // Two allgather blocks swapped.
  const Layout ag = layout_of(Collective::AllGather, 4096, 4);
  std::vector<float> out = simulate(ag, 2, 1);
  std::swap_ranges(out.begin(), out.begin() + ag.block, out.begin() + ag.block);
  EXPECT_GE(verify_output(ag, 2, 1, out).wrong, 2 * ag.block * 99 / 100);
  // Another rank's alltoall result.
  const Layout a2a = layout_of(Collective::AllToAll, 4096, 4);
  EXPECT_GE(verify_output(a2a, 2, 1, simulate(a2a, 3, 1)).wrong, a2a.out_count * 99 / 100);
  // A short output counts its missing tail.
  std::vector<float> short_out = simulate(ar, 0, 5);
  short_out.resize(10);
  EXPECT_EQ(verify_output(ar, 0, 5, short_out).wrong, ar.out_count - 10);
}

TEST(CollectivePattern, SumsStayExactFor1024Ranks) {
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter}) {
    const Layout l = layout_of(c, c == Collective::AllReduce ? 256 * 4 : 1024 * 4 * 4, 1024);
    for (int rank : {0, 1023}) {
      std::vector<float> forward = simulate(l, rank, 2), backward = simulate(l, rank, 2, true);
      EXPECT_EQ(verify_output(l, rank, 2, forward).wrong, 0u) << name_of(c);
      EXPECT_EQ(verify_output(l, rank, 2, backward).wrong, 0u) << name_of(c);
      for (float x : forward) EXPECT_LT(x, 16777216.0f);
    }
  }
  const Layout ag = layout_of(Collective::AllGather, 1 << 20, 8);
  for (uint64_t i = 0; i < ag.in_count; ++i) {
    float x = input_value(ag, 5, i, 9);
    ASSERT_TRUE(x >= 0 && x < 16777216.0f && x == std::floor(x));
  }
}

TEST(CollectivePattern, BroadcastNonRootsStartPoisoned) {
  const Layout l = layout_of(Collective::Broadcast, 64, 4);
  std::vector<float> in(l.in_count);
  fill_input(l, 2, 0, in);
  for (float x : in) EXPECT_EQ(x, kPoison);
  EXPECT_EQ(verify_output(l, 2, 0, in).wrong, l.out_count);
}

// ---- options and environment ----

Result<Options> parse(std::vector<std::string> args, std::string* help = nullptr) {
  args.insert(args.begin(), "fabemu-collective");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_options(static_cast<int>(argv.size()), argv.data(), help);
}

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(CollectiveOptions, OnTheFabricsClockTheBenchmarkDividesByNothing) {
  // Dilated x3000 on the machine's clock: the wall clock's time / 3000.
  EXPECT_EQ(clock_scale(env_of({}), 3000), 3000);
  EXPECT_EQ(clock_scale(env_of({{"LD_PRELOAD", "/x/other.so"}, {"FAKETIME", "+0 x2"}}), 3000),
            3000);
  // Started with hosts: {clock: fabric} (exec --all --clock fabric): its clock reads the real
  // fabric's time already.
  EXPECT_EQ(clock_scale(env_of({{"LD_PRELOAD",
                                 "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1:/f/"
                                 "libfabemu-clockwait.so"},
                                {"FAKETIME", "+0 x0.000333333333333"}}),
                        3000),
            1);
}

TEST(CollectiveOptions, Defaults) {
  auto o = parse({});
  ASSERT_TRUE(o) << error_of(o);
  EXPECT_EQ(o->library, Library::Gloo);
  EXPECT_EQ(o->transport, Transport::Tcp);
  EXPECT_EQ(o->collectives, std::vector<Collective>{Collective::AllReduce});
  EXPECT_EQ(o->sizes, (std::vector<uint64_t>{65536, 1048576, 16777216}));
  EXPECT_EQ(o->iterations, 20);
  EXPECT_EQ(o->warmup, 2);
  EXPECT_EQ(o->timeout_s, 60);
  EXPECT_EQ(o->allreduce, AllreduceAlgorithm::RingChunked);
  EXPECT_FALSE(o->json);
}

TEST(CollectiveOptions, ParsesEverything) {
  auto o = parse({"--library", "gloo", "--transport", "ibverbs", "--collective",
                  "allgather,broadcast", "--sizes", "4K,1M,2G", "-n", "5", "--warmup", "0"});
  EXPECT_NE(error_of(o).find("outside 1..1G"), std::string::npos) << error_of(o);
  o = parse({"--transport", "ibverbs", "--collective", "allgather,broadcast", "--sizes",
             "4K,1MiB,1G", "-n", "5", "--warmup", "0", "--json", "--json-out", "x.json",
             "--gloo-allreduce", "halving_doubling", "--timeout", "2.5"});
  ASSERT_TRUE(o) << error_of(o);
  EXPECT_EQ(o->transport, Transport::Ibverbs);
  EXPECT_EQ(o->collectives,
            (std::vector<Collective>{Collective::AllGather, Collective::Broadcast}));
  EXPECT_EQ(o->sizes, (std::vector<uint64_t>{4096, 1048576, 1073741824}));
  EXPECT_EQ(o->iterations, 5);
  EXPECT_EQ(o->warmup, 0);
  EXPECT_TRUE(o->json);
  EXPECT_EQ(o->json_out, "x.json");
  EXPECT_EQ(o->allreduce, AllreduceAlgorithm::HalvingDoubling);
  EXPECT_DOUBLE_EQ(o->timeout_s, 2.5);
}

TEST(CollectiveOptions, UsageErrorsSayWhatIsValid) {
  EXPECT_NE(error_of(parse({"--library", "nccl"})).find("valid: gloo, mpi"), std::string::npos);
  EXPECT_NE(error_of(parse({"--transport", "rdma"})).find("valid: ibverbs, tcp"),
            std::string::npos);
  EXPECT_NE(error_of(parse({"--collective", "gather"})).find("unknown collective"),
            std::string::npos);
  EXPECT_NE(error_of(parse({"--sizes", "1M,0"})).find("outside"), std::string::npos);
  EXPECT_NE(error_of(parse({"--sizes", "10 apples"})).find("--sizes"), std::string::npos);
  EXPECT_FALSE(parse({"--iterations", "0"}));
  EXPECT_FALSE(parse({"--bogus"}));
  EXPECT_NE(error_of(parse({"--library", "mpi", "--transport", "tcp"})).find("--library gloo"),
            std::string::npos);
  std::string help;
  auto h = parse({"--help"}, &help);
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->help);
  EXPECT_NE(help.find("--collective"), std::string::npos);
}

TEST(CollectiveEnv, RanksComeFromRankAndWorldSize) {
  auto r = ranks_from_env(env_of({{"RANK", "3"}, {"WORLD_SIZE", "8"}}));
  ASSERT_TRUE(r) << error_of(r);
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->size, 8);
  EXPECT_NE(error_of(ranks_from_env(env_of({{"RANK", "0"}}))).find("RANK and WORLD_SIZE"),
            std::string::npos);
  EXPECT_NE(error_of(ranks_from_env(env_of({{"RANK", "8"}, {"WORLD_SIZE", "8"}})))
                .find("not below WORLD_SIZE"),
            std::string::npos);
  EXPECT_FALSE(ranks_from_env(env_of({{"RANK", "x"}, {"WORLD_SIZE", "8"}})));
  EXPECT_FALSE(ranks_from_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}})));
}

TEST(CollectiveEnv, GlooSettingsFromTheEmulatorsEnvironment) {
  const std::map<std::string, std::string> host = {{"FABEMU_SHARED_DIR", "/run/lab/shared"},
                                                   {"FABEMU_RUN_ID", "r42"},
                                                   {"FABEMU_ADDR", "10.0.1.2"},
                                                   {"GLOO_SOCKET_IFNAME", "eth0"}};
  auto s = gloo_settings(*parse({"--timeout", "3"}), env_of(host));
  ASSERT_TRUE(s) << error_of(s);
  EXPECT_EQ(s->store_dir, "/run/lab/shared/gloo");
  EXPECT_EQ(s->run_id, "r42");
  EXPECT_EQ(s->addr, "10.0.1.2");
  EXPECT_EQ(s->iface, "");
  EXPECT_EQ(s->timeout, std::chrono::milliseconds(3000));

  // The command line wins; an interface is used when there is no address.
  s = gloo_settings(*parse({"--store", "/x", "--run-id", "mine", "--iface", "veth1"}),
                    env_of(host));
  ASSERT_TRUE(s) << error_of(s);
  EXPECT_EQ(s->store_dir, "/x");
  EXPECT_EQ(s->run_id, "mine");
  EXPECT_EQ(s->addr, "");
  EXPECT_EQ(s->iface, "veth1");
  auto no_addr = host;
  no_addr.erase("FABEMU_ADDR");
  s = gloo_settings(*parse({}), env_of(no_addr));
  ASSERT_TRUE(s) << error_of(s);
  EXPECT_EQ(s->iface, "eth0");
}

// Small tcp allreduces get the sync pairs; nothing else does, and nothing above 64K can.
TEST(CollectiveEnv, OnlySmallTcpAllreducesRunOverSyncPairs) {
  const std::map<std::string, std::string> host = {
      {"FABEMU_SHARED_DIR", "/s"}, {"FABEMU_RUN_ID", "r"}, {"FABEMU_ADDR", "10.0.1.2"}};
  auto sync_max = [&](std::vector<std::string> args) {
    auto o = parse(std::move(args));
    EXPECT_TRUE(o) << error_of(o);
    auto s = o ? gloo_settings(*o, env_of(host)) : Result<GlooSettings>(o.error());
    return s ? s->sync_max : ~uint64_t{0};
  };
  EXPECT_EQ(sync_max({}), 64u << 10);  // the default sizes start at 64K
  EXPECT_EQ(sync_max({"--sizes", "16K,1M", "--gloo-sync-max", "32K"}), 32u << 10);
  EXPECT_EQ(sync_max({"--sizes", "1M,16M"}), 0u);  // no second mesh for nothing
  EXPECT_EQ(sync_max({"--sizes", "4K", "--gloo-sync-max", "0"}), 0u);
  EXPECT_EQ(sync_max({"--sizes", "4K", "--collective", "alltoall,allgather"}), 0u);
  EXPECT_NE(error_of(parse({"--gloo-sync-max", "1M"})).find("64K"), std::string::npos);
  EXPECT_NE(error_of(parse({"--gloo-sync-max", "lots"})).find("--gloo-sync-max"),
            std::string::npos);
}

// --qps-per-peer: Gloo's, for the collectives that split, 1 to 16; no sync mesh beside it.
TEST(CollectiveEnv, QpsPerPeerSplitsOnlyWhatCanBeSplit) {
  const std::map<std::string, std::string> host = {
      {"FABEMU_SHARED_DIR", "/s"}, {"FABEMU_RUN_ID", "r"}, {"FABEMU_ADDR", "10.0.1.2"}};
  auto o = parse(
      {"--collective", "allreduce,alltoall,broadcast", "--qps-per-peer", "4", "--sizes", "16K"});
  ASSERT_TRUE(o) << error_of(o);
  EXPECT_EQ(o->qps_per_peer, 4);
  auto s = gloo_settings(*o, env_of(host));
  ASSERT_TRUE(s) << error_of(s);
  EXPECT_EQ(s->qps_per_peer, 4);
  EXPECT_EQ(s->sync_max, 0u);
  EXPECT_EQ(parse({})->qps_per_peer, 1);
  EXPECT_NE(error_of(parse({"--qps-per-peer", "0"})).find("--qps-per-peer"), std::string::npos);
  EXPECT_NE(error_of(parse({"--qps-per-peer", "17"})).find("--qps-per-peer"), std::string::npos);
  EXPECT_NE(error_of(parse({"--collective", "allgather", "--qps-per-peer", "2"}))
                .find("allgather cannot split"),
            std::string::npos);
  EXPECT_NE(error_of(parse({"--library", "mpi", "--qps-per-peer", "2"})).find("--library gloo"),
            std::string::npos);
  EXPECT_TRUE(splits_across_qps(Collective::AllToAll));
  EXPECT_FALSE(splits_across_qps(Collective::ReduceScatter));
}

TEST(CollectiveEnv, MissingRendezvousSettingsAreExplained) {
  std::map<std::string, std::string> host = {{"FABEMU_ADDR", "10.0.1.2"}};
  EXPECT_NE(error_of(gloo_settings(*parse({}), env_of(host))).find("FABEMU_SHARED_DIR"),
            std::string::npos);
  host["FABEMU_SHARED_DIR"] = "/s";
  std::string e = error_of(gloo_settings(*parse({}), env_of(host)));
  EXPECT_NE(e.find("same id"), std::string::npos) << e;
  host["FABEMU_RUN_ID"] = "r";
  host.erase("FABEMU_ADDR");
  e = error_of(gloo_settings(*parse({}), env_of(host)));
  EXPECT_NE(e.find("127.0.0.1"), std::string::npos) << e;
}

TEST(CollectiveEnv, IbverbsDeviceFromNcclVariables) {
  std::map<std::string, std::string> host = {{"FABEMU_SHARED_DIR", "/s"},
                                             {"FABEMU_RUN_ID", "r"},
                                             {"NCCL_IB_HCA", "=rxe-lab-h1:2,rxe-lab-h2"},
                                             {"NCCL_IB_GID_INDEX", "3"}};
  auto s = gloo_settings(*parse({"--transport", "ibverbs"}), env_of(host));
  ASSERT_TRUE(s) << error_of(s);
  EXPECT_EQ(s->ib_dev, "rxe-lab-h1");
  EXPECT_EQ(s->ib_port, 2);
  EXPECT_EQ(s->gid_index, 3);

  s = gloo_settings(*parse({"--transport", "ibverbs", "--ib-dev", "rxe0", "--gid-index", "0"}),
                    env_of(host));
  ASSERT_TRUE(s) << error_of(s);
  EXPECT_EQ(s->ib_dev, "rxe0");
  EXPECT_EQ(s->ib_port, 1);
  EXPECT_EQ(s->gid_index, 0);

  host.erase("NCCL_IB_HCA");
  host.erase("NCCL_IB_GID_INDEX");
  s = gloo_settings(*parse({"--transport", "ibverbs"}), env_of(host));
  ASSERT_TRUE(s) << error_of(s);
  EXPECT_EQ(s->ib_dev, "");  // the only device there is
  EXPECT_EQ(s->gid_index, 1);

  host["NCCL_IB_HCA"] = "^mlx5_1";
  EXPECT_NE(error_of(gloo_settings(*parse({"--transport", "ibverbs"}), env_of(host)))
                .find("only excludes"),
            std::string::npos);
}

// ---- predictions ----

TEST(CollectivePrediction, LinearModelPerCollective) {
  auto p = Predictions::parse(R"({
    "allreduce": {"latency_s": 1e-4, "seconds_per_byte": 1e-9, "bus_factor": 1.75},
    "alltoall": {"seconds_per_byte": 2E-9, "latency_s": 0},
    "reduce": {"latency_s": 1, "seconds_per_byte": 1},
    "note": ["written by", "the model", null, true, -1.5e3, {"x": "\"\u0041"}]
  })",
                              "pred.json");
  ASSERT_TRUE(p) << error_of(p);
  EXPECT_TRUE(p->has(Collective::AllReduce));
  EXPECT_FALSE(p->has(Collective::Broadcast));
  EXPECT_DOUBLE_EQ(*p->time_s(Collective::AllReduce, 1'000'000), 1e-4 + 1e-3);
  // busbw uses the measurement's bus factor (2*7/8 for 8 ranks), not the file's.
  EXPECT_NEAR(*p->busbw(Collective::AllReduce, 1'000'000, 8), 1e6 / 1.1e-3 / 1e9 * 1.75, 1e-9);
  EXPECT_NEAR(*p->busbw(Collective::AllToAll, 1'000'000, 4), 0.5 * 0.75, 1e-9);
  EXPECT_FALSE(p->busbw(Collective::Broadcast, 1000, 4));

  // Unshaped links: the model gives a latency but no bandwidth bound.
  p = Predictions::parse(R"({"allgather": {"latency_s": 1e-5, "seconds_per_byte": 0}})", "p");
  ASSERT_TRUE(p) << error_of(p);
  EXPECT_DOUBLE_EQ(*p->time_s(Collective::AllGather, 4096), 1e-5);
  EXPECT_FALSE(p->busbw(Collective::AllGather, 4096, 4));
}

TEST(CollectivePrediction, BadFilesSayWhereAndWhat) {
  std::string e =
      error_of(Predictions::parse("{\"allreduce\": {\"latency_s\": 1,\n  "
                                  "\"seconds_per_byte\" 2}}",
                                  "p.json"));
  EXPECT_NE(e.find("p.json: line 2, column "), std::string::npos) << e;
  EXPECT_NE(e.find("expected ':'"), std::string::npos) << e;
  e = error_of(Predictions::parse(R"({"allgather": {"latency_s": 1}})", "p.json"));
  EXPECT_NE(e.find("\"allgather\": missing \"seconds_per_byte\""), std::string::npos) << e;
  e = error_of(
      Predictions::parse(R"({"allgather": {"latency_s": -1, "seconds_per_byte": 0}})", "p.json"));
  EXPECT_NE(e.find("must be a number >= 0"), std::string::npos) << e;
  EXPECT_FALSE(Predictions::parse("[1, 2]", "p.json"));
  EXPECT_FALSE(Predictions::parse("{} x", "p.json"));
  EXPECT_FALSE(Predictions::parse("{\"a\": \"unterminated}", "p.json"));
  EXPECT_FALSE(Predictions::parse("", "p.json"));
  EXPECT_NE(error_of(Predictions::load("/nonexistent/p.json")).find("reading predictions"),
            std::string::npos);
}

// ---- the measurement loop, on a fake library ----

// One rank whose "library" copies input to output, and corrupts an element of the output at
// one iteration when asked.
class LoopbackCommunicator : public Communicator {
 public:
  int corrupt_run = -1;
  int barriers = 0;
  int runs = 0;

  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string library() const override { return "fake"; }
  std::string transport() const override { return "none"; }
  std::string algorithm(Collective) const override { return "copy"; }
  bool in_place(Collective c) const override { return c == Collective::AllReduce; }
  Result<std::unique_ptr<Operation>> prepare(const Layout&, std::span<float> in,
                                             std::span<float> out) override {
    return std::unique_ptr<Operation>(new Copy(this, in, out));
  }
  Result<void> barrier() override {
    ++barriers;
    return ok();
  }
  Result<std::vector<double>> allgather(std::span<const double> mine) override {
    return std::vector<double>(mine.begin(), mine.end());
  }

 private:
  struct Copy : Operation {
    Copy(LoopbackCommunicator* c, std::span<float> in, std::span<float> out)
        : comm(c), in(in), out(out) {}
    Result<void> run() override {
      std::copy(in.begin(), in.end(), out.begin());
      if (comm->runs++ == comm->corrupt_run) out[out.size() - 1] = 12345.0f;
      return ok();
    }
    LoopbackCommunicator* comm;
    std::span<float> in, out;
  };
};

TEST(CollectiveBenchmark, ChecksEveryIterationIncludingWarmup) {
  for (Collective c : kAllCollectives) {
    LoopbackCommunicator comm;
    auto r = run_size(comm, c, 4096, BenchmarkConfig{5, 2});
    ASSERT_TRUE(r) << error_of(r);
    EXPECT_EQ(r->wrong, 0u) << name_of(c);
    EXPECT_EQ(comm.barriers, 7);
    EXPECT_EQ(comm.runs, 7);
    EXPECT_EQ(r->rank_time_us.size(), 1u);
    ASSERT_EQ(r->iteration_time_us.size(), 5u) << "the timed iterations, not the warmup";
    EXPECT_NEAR(r->rank_time_us[0],
                std::accumulate(r->iteration_time_us.begin(), r->iteration_time_us.end(), 0.0) / 5,
                1e-6);
    EXPECT_GE(r->time_us, 0.0);
    EXPECT_EQ(r->algorithm, "copy");
  }
  LoopbackCommunicator comm;
  comm.corrupt_run = 1;  // a warmup iteration
  auto r = run_size(comm, Collective::AllGather, 4096, BenchmarkConfig{3, 2});
  ASSERT_TRUE(r) << error_of(r);
  EXPECT_EQ(r->wrong, 1u);
  EXPECT_EQ(r->rank_wrong, std::vector<uint64_t>{1});
  EXPECT_EQ(r->local.wrong, 1u);
  EXPECT_EQ(r->local_iteration, 1);
  EXPECT_EQ(r->local.first_index, r->layout.out_count - 1);
  EXPECT_EQ(r->local.got, 12345.0f);
}

// ---- output ----

SizeResult sample_result() {
  SizeResult r;
  r.layout = layout_of(Collective::AllReduce, 1 << 20, 4);
  r.algorithm = "ring_chunked";
  r.iterations = 20;
  r.warmup = 2;
  r.rank_time_us = {900.0, 1000.0, 950.0, 980.0};
  r.time_us = 1000.0;
  r.algbw = gb_per_s(r.layout.size, 1e-3);
  r.busbw = r.algbw * 1.5;
  r.rank_wrong = {0, 0, 0, 0};
  return r;
}

TEST(CollectiveReport, TableHasNcclTestsColumnsAndPredictionsWhenGiven) {
  RunInfo run{"gloo", "tcp", 4, false};
  std::string header = table_header(run, Collective::AllReduce, "ring_chunked");
  EXPECT_EQ(header.rfind("#  collective allreduce  library gloo  transport tcp  ranks 4", 0), 0u)
      << header;
  for (const char* column : {"size", "count", "type", "redop", "root", "time(us)", "algbw(GB/s)",
                             "busbw(GB/s)", "#wrong"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column;
  }
  EXPECT_EQ(header.find("pred_busbw"), std::string::npos);
  SizeResult r = sample_result();
  std::string row = table_row(run, r);
  EXPECT_NE(row.find("1048576"), std::string::npos) << row;
  EXPECT_NE(row.find("262144"), std::string::npos) << row;
  EXPECT_NE(row.find("sum"), std::string::npos) << row;
  EXPECT_NE(row.find("1000.00"), std::string::npos) << row;
  EXPECT_NE(row.find("1.049"), std::string::npos) << row;  // algbw
  EXPECT_NE(row.find("1.573"), std::string::npos) << row;  // busbw

  run.predictions = true;
  EXPECT_NE(table_header(run, Collective::AllReduce, "x").find("pred_busbw   ratio"),
            std::string::npos);
  EXPECT_NE(table_row(run, r).find("      -       -"), std::string::npos) << table_row(run, r);
  r.pred_busbw = 3.146;
  row = table_row(run, r);
  EXPECT_NE(row.find("3.146    0.50"), std::string::npos) << row;
}

TEST(CollectiveReport, VerdictAndJson) {
  RunInfo run{"gloo", "tcp", 4, true};
  SizeResult r = sample_result();
  EXPECT_EQ(verdict_line({r}), "# wrong values: 0 OK\n");
  std::string json = json_result(run, r);
  const Json j = Json::parse(json);
  EXPECT_EQ(j["type"], "result");
  EXPECT_EQ(j["collective"], "allreduce");
  EXPECT_EQ(j["algorithm"], "ring_chunked");
  EXPECT_EQ(j["size"], 1048576);
  EXPECT_EQ(j["count"], 262144);
  EXPECT_EQ(j["redop"], "sum");
  EXPECT_EQ(j["root"], -1);
  EXPECT_EQ(j["time_us"], 1000.0);
  EXPECT_NEAR(j["busbw_gbps"].get<double>(), 1.572864, 1e-9);
  EXPECT_EQ(j["bus_factor"], 1.5);
  EXPECT_EQ(j["wrong"], 0);
  EXPECT_EQ(j["rank_time_us"], Json({900.0, 1000.0, 950.0, 980.0}));
  EXPECT_TRUE(j["pred_busbw_gbps"].is_null());
  EXPECT_TRUE(j["ratio"].is_null());
  // Keys in the order nccl-tests prints its columns.
  EXPECT_EQ(json.rfind(R"({"type":"result","collective":"allreduce",)", 0), 0u) << json;
  EXPECT_EQ(json.back(), '\n');

  SizeResult bad = r;
  bad.layout = layout_of(Collective::AllToAll, 4096, 4);
  bad.wrong = 7;
  EXPECT_EQ(verdict_line({r, bad}), "# wrong values: 7 FAILED: alltoall 4096 (7)\n");
  const Json summary = Json::parse(json_summary(run, {r, bad}));
  EXPECT_EQ(summary["ok"], false);
  EXPECT_EQ(summary["wrong"], 7);
  EXPECT_NEAR(summary["avg_busbw_gbps"]["allreduce"].get<double>(), 1.572864, 1e-9);
  EXPECT_TRUE(summary["avg_busbw_gbps"].contains("alltoall"));
}

}  // namespace
}  // namespace fabemu::collective
