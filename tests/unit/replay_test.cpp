// Replay: SimAI's workload text and Chakra's traces read into each rank's operations (groups as
// Megatron lays them out, waits as SimAI's schedule has them), bad files refused with the file,
// line and field, and the streams played on a virtual clock.
#include <gtest/gtest.h>

#include <algorithm>

#include "../replay/chakra_trace.h"
#include "replay/chakra.h"
#include "replay/schedule.h"
#include "replay/simai.h"
#include "util/files.h"

namespace fabemu::replay {
namespace {

const std::string kSource = FABEMU_SOURCE_DIR;

std::string header(const std::string& layout) {
  return "HYBRID_TRANSFORMER_FWD_IN_BCKWD " + layout + " checkpoints: 0 checkpoint_initiates: 0\n";
}

// SimAI's example/microAllReduce.txt as the repository has it (a trailing space on one line,
// no newline at the end).
const std::string kMicro =
    header("model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 all_gpus: 8") +
    "2\n"
    "embedding_layer     -1 556000  ALLREDUCE   16777216      1       NONE 0        1      NONE   "
    "0      1 \n"
    "embedding_layer     -1 556000  ALLREDUCE   67108864      1       NONE 0        1      NONE   "
    "0      1";

std::vector<int> ranks_of(const Program& p, const std::string& kind, int rank) {
  for (const Group& g : p.groups)
    if (g.kind == kind && std::count(g.ranks.begin(), g.ranks.end(), rank)) return g.ranks;
  return {};
}

TEST(SimaiReader, SimaisMicroAllReduceIsTwoBlockingAllreducesOnTheTensorParallelGroup) {
  auto p = read_simai(kMicro, "microAllReduce.txt");
  ASSERT_TRUE(p) << p.error().what();
  EXPECT_EQ(p->world, 8);
  EXPECT_EQ(p->tp, 8);
  EXPECT_EQ(p->dp, 1);
  EXPECT_EQ(ranks_of(*p, "tp", 5), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  const auto& ops = p->ranks[3];
  // Forward: compute, allreduce 16 MiB, compute (after it), allreduce 64 MiB; backward: the
  // two input and weight gradients (NONE: no collective); the two updates.
  ASSERT_EQ(ops.size(), 10u);
  EXPECT_EQ(ops[0].kind, OpKind::Compute);
  EXPECT_EQ(ops[0].compute_ns, 556000u);  // SimAI's ticks are ns
  EXPECT_EQ(ops[1].kind, OpKind::Collective);
  EXPECT_EQ(ops[1].collective, Collective::AllReduce);
  EXPECT_EQ(ops[1].bytes, 16777216u);
  EXPECT_EQ(ops[2].deps, (std::vector<size_t>{1}));  // the forward waits for the collective
  EXPECT_EQ(ops[3].bytes, 67108864u);
  EXPECT_EQ(ops[3].source, 4);  // the file's line
  EXPECT_EQ(p->memory_bytes(3), 2u * 67108864u);
  EXPECT_EQ(
      p->describe(),
      "simai: 8 ranks (tp 8, dp 1), 2 layers, 10 operations per rank, 16 collective calls in all");
}

TEST(SimaiReader, GroupsFollowMegatronsLayoutAndTheWeightGradientOverlapsTheBackwardPass) {
  auto text = read_file(kSource + "/tests/data/replay/tp4-dp2.txt");
  ASSERT_TRUE(text);
  auto p = read_simai(*text, "tp4-dp2.txt");
  ASSERT_TRUE(p) << p.error().what();
  EXPECT_EQ(ranks_of(*p, "tp", 6), (std::vector<int>{4, 5, 6, 7}));  // consecutive
  EXPECT_EQ(ranks_of(*p, "dp", 6), (std::vector<int>{2, 6}));        // strided by tp
  // Backward of the last layer: input-gradient compute and its allreduce (tp), then the
  // weight-gradient compute and its allreduce (dp); the next layer down waits for the
  // input-gradient allreduce only.
  const auto& ops = p->ranks[6];
  size_t ig = 0, wg = 0, next = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].pass == Pass::InputGradient && ops[i].kind == OpKind::Collective && !ig) ig = i;
    if (ops[i].pass == Pass::WeightGradient && ops[i].kind == OpKind::Collective && !wg) wg = i;
    if (ops[i].layer == "attention" && ops[i].pass == Pass::InputGradient && !next) next = i;
  }
  EXPECT_EQ(p->groups[ops[ig].group].kind, "tp");
  EXPECT_EQ(p->groups[ops[wg].group].kind, "dp");
  EXPECT_EQ(ops[next].deps, (std::vector<size_t>{ig}));
}

TEST(SimaiReader, ExpertParallelGroupsSplitTheDataParallelOnes) {
  const std::string text =
      header("model_parallel_NPU_group: 2 ep: 2 pp: 1 vpp: 1 ga: 1 all_gpus: 8") +
      "1\nmoe -1 10 ALLTOALL_EP 4096 10 ALLTOALL_EP 4096 10 ALLREDUCE_DP_EP 8192 1\n";
  auto p = read_simai(text, "moe.txt");
  ASSERT_TRUE(p) << p.error().what();
  // dp = 4 (ranks 1, 3, 5, 7 for tp lane 1); ep runs of 2 consecutive members; dp_ep one of
  // each run.
  EXPECT_EQ(ranks_of(*p, "dp", 3), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(ranks_of(*p, "ep", 3), (std::vector<int>{1, 3}));
  EXPECT_EQ(ranks_of(*p, "dp_ep", 3), (std::vector<int>{3, 7}));
  EXPECT_EQ(p->ranks[3][1].collective, Collective::AllToAll);
  EXPECT_EQ(p->groups[p->ranks[3][1].group].kind, "ep");
}

// Two stages of TP2 x DP2: rank = stage * 4 + d * 2 + t. A stage's groups stay within it; the
// second stage waits for the first's activations, and the first's backward for the second's
// gradients.
TEST(SimaiReader, PipelineStagesSendActivationsForwardAndGradientsBack) {
  const std::string text =
      header("model_parallel_NPU_group: 2 ep: 1 pp: 2 vpp: 1 ga: 1 all_gpus: 8") +
      "pp_comm 1048576\n1\nmlp -1 100 ALLREDUCE 4096 100 ALLREDUCE 4096 100 ALLREDUCE 8192 1\n";
  // pp_comm after the header's line is not SimAI's: it is a key of the header line.
  EXPECT_FALSE(read_simai(text, "pp.txt"));
  const std::string one_line =
      header("model_parallel_NPU_group: 2 ep: 1 pp: 2 vpp: 1 ga: 1 all_gpus: 8 pp_comm 1048576") +
      "1\nmlp -1 100 ALLREDUCE 4096 100 ALLREDUCE 4096 100 ALLREDUCE 8192 1\n";
  auto p = read_simai(one_line, "pp.txt");
  ASSERT_TRUE(p) << p.error().what();
  EXPECT_EQ(p->dp, 2);
  EXPECT_EQ(ranks_of(*p, "tp", 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(ranks_of(*p, "dp", 5), (std::vector<int>{5, 7}));
  // Rank 5 (stage 2): first a receive from rank 1, last a send back to it.
  const auto& r5 = p->ranks[5];
  EXPECT_EQ(r5.front().kind, OpKind::Recv);
  EXPECT_EQ(r5.front().peer, 1);
  EXPECT_EQ(r5.front().bytes, 1048576u);
  EXPECT_EQ(r5[1].deps, std::vector<size_t>{0});  // the first compute waits for it
  const auto send_back =
      std::find_if(r5.begin(), r5.end(), [](const Op& op) { return op.kind == OpKind::Send; });
  ASSERT_NE(send_back, r5.end());
  EXPECT_EQ(send_back->peer, 1);
  EXPECT_EQ(p->groups[send_back->group].ranks, (std::vector<int>{5, 1}));
  EXPECT_EQ(p->groups[send_back->group].kind, "pp_bwd");
  // Rank 1 (stage 1): sends forward after its forward pass, and its backward waits for rank 5.
  const auto& r1 = p->ranks[1];
  size_t send = 0, recv = 0;
  for (size_t i = 0; i < r1.size(); ++i) {
    if (r1[i].kind == OpKind::Send) send = i;
    if (r1[i].kind == OpKind::Recv) recv = i;
  }
  ASSERT_TRUE(send && recv);
  EXPECT_LT(send, recv);
  EXPECT_EQ(r1[send].pass, Pass::Forward);
  EXPECT_EQ(r1[recv + 1].pass, Pass::InputGradient);
  EXPECT_EQ(r1[recv + 1].deps, std::vector<size_t>{recv});
  // The stages run one after the other: stage 2's forward after stage 1's.
  auto t =
      simulate(*p, [](int, const Op& op) { return double(op.compute_ns ? op.compute_ns : 1000); });
  ASSERT_TRUE(t) << t.error().what();
  EXPECT_GT((*t)[5][1].start_ns, (*t)[1][1].end_ns);
}

struct BadSimai {
  std::string text;
  std::string error;
};

class SimaiBadInput : public ::testing::TestWithParam<BadSimai> {};

TEST_P(SimaiBadInput, NamesTheFileLineAndField) {
  auto p = read_simai(GetParam().text, "bad.txt");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().what().find(GetParam().error), std::string::npos) << p.error().what();
}

const std::string kGood = header("model_parallel_NPU_group: 2 ep: 1 pp: 1 ga: 1 all_gpus: 4");

INSTANTIATE_TEST_SUITE_P(
    Files, SimaiBadInput,
    ::testing::Values(
        BadSimai{"", "bad.txt:1: header: the file is empty"},
        BadSimai{"NONSENSE all_gpus: 4\n1\n", "bad.txt:1: policy: 'NONSENSE' is not replayed"},
        BadSimai{header("model_parallel_NPU_group: 2 ep: 1"), "all_gpus: missing or 0"},
        BadSimai{header("model_parallel_NPU_group: 3 all_gpus: 4"),
                 "bad.txt:1: all_gpus: 4 ranks do not split"},
        BadSimai{header("model_parallel_NPU_group: 2 pp: 3 all_gpus: 4"),
                 "bad.txt:1: all_gpus: 4 ranks do not split into tensor-parallel groups of 2 "
                 "times 3 pipeline stages"},
        BadSimai{header("model_parallel_NPU_group: 2 colour: 4 all_gpus: 4"),
                 "bad.txt:1: colour: unknown header key"},
        BadSimai{kGood, "bad.txt:2: layer count: missing"},
        BadSimai{kGood + "2\nl1 -1 10 NONE 0 10 NONE 0 10 NONE 0 1\n",
                 "bad.txt:4: layer 2: missing: the file ends after 1 of 2 layers"},
        BadSimai{kGood + "1\nl1 -1 10 ALLREDUCEX 5 10 NONE 0 10 NONE 0 1\n",
                 "bad.txt:3: forward type: unknown type 'ALLREDUCEX'"},
        BadSimai{kGood + "1\nl1 -1 1x0 NONE 0 10 NONE 0 10 NONE 0 1\n",
                 "bad.txt:3: forward compute: '1x0' is not a whole number"},
        BadSimai{kGood + "1\nl1 -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 0 1\n",
                 "bad.txt:3: weight-gradient bytes: 0 bytes for a ALLREDUCE"},
        BadSimai{kGood + "1\nl1 -1 10 NONE 0 10 NONE 0 10\n",
                 "bad.txt:3: weight-gradient type: missing"},
        BadSimai{kGood + "1\nl1 -1 10 NONE 0 10 NONE 0 10 NONE 0 1\nl2\n",
                 "bad.txt:4: layer: more layers than the count 1 says"}));

TEST(ReplaySchedule, ForwardWaitsForItsCollectiveAndTheWeightGradientHidesBehindCompute) {
  // Two ranks, data-parallel, one layer: 100 each of forward, input-gradient and
  // weight-gradient compute, and the weight gradient's allreduce.
  const std::string text = header("model_parallel_NPU_group: 1 ep: 1 pp: 1 ga: 1 all_gpus: 2") +
                           "1\nl1 -1 100 NONE 0 100 NONE 0 100 ALLREDUCE 1000 0\n";
  auto p = read_simai(text, "s.txt");
  ASSERT_TRUE(p) << p.error().what();
  // Compute as recorded; the allreduce takes 1 ns a byte.
  auto t = simulate(*p, [](int, const Op& op) {
    return op.kind == OpKind::Compute ? double(op.compute_ns) : double(op.bytes);
  });
  ASSERT_TRUE(t) << t.error().what();
  const IterationSummary s = summarize(*p, *t);
  // 300 of compute, then the weight-gradient allreduce's 1000 with nothing left to hide it.
  EXPECT_EQ(s.iteration_ns, 1300);
  EXPECT_EQ(s.compute_ns, 300);
  EXPECT_EQ(s.exposed_comm_ns, 1000);
  ASSERT_EQ(s.collectives.size(), 1u);
  EXPECT_EQ(s.collectives[0].time_ns, 1000);
  // busbw = size / time * 2(n-1)/n = 1000 B / 1 us * 1.
  EXPECT_DOUBLE_EQ(s.collectives[0].busbw_Bps, 1e9);
}

TEST(ReplaySchedule, ACollectiveStartsWhenItsLastMemberGetsThere) {
  Program p;
  p.format = "test";
  p.world = 2;
  p.groups = {{{0, 1}, "world"}};
  Op slow{.kind = OpKind::Compute, .compute_ns = 500};
  Op fast{.kind = OpKind::Compute, .compute_ns = 100};
  Op ar{.kind = OpKind::Collective, .group = 0, .bytes = 10, .deps = {0}};
  p.ranks = {{slow, ar}, {fast, ar}};
  ASSERT_TRUE(validate(p));
  auto t = simulate(p, [](int, const Op& op) { return double(op.compute_ns + op.bytes); });
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)[1][1].start_ns, 500);  // rank 1 waits for rank 0
  EXPECT_EQ((*t)[1][1].end_ns, 510);
}

TEST(ReplaySchedule, MembersThatIssueDifferentCollectivesAreRefused) {
  Program p;
  p.world = 2;
  p.groups = {{{0, 1}, "world"}};
  Op a{.kind = OpKind::Collective, .group = 0, .bytes = 10};
  Op b = a;
  b.bytes = 20;
  p.ranks = {{a}, {b}};
  auto v = validate(p);
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().what().find("issue different collectives"), std::string::npos);
}

TEST(ReplaySchedule, ARankRecordRoundTripsThroughJson) {
  RankRecord r{3, {10, 20}, {{{1, 2}}, {{3, 4}}}, 99, 1, "x"};
  auto back = parse_record_json(record_json(r), "r.json");
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(back->rank, 3);
  EXPECT_EQ(back->ops[1][0].end_ns, 4);
  EXPECT_EQ(back->checked, 99u);
  // Two ranks that started 10 ns apart on one timeline.
  RankRecord other = r;
  other.start_ns = {0, 0};
  const Timeline t = iteration_timeline({r, other}, 0);
  EXPECT_EQ(t[0][0].start_ns, 11);
  EXPECT_EQ(t[1][0].start_ns, 1);
}

std::vector<std::string> origins(size_t n) {
  std::vector<std::string> o;
  for (size_t r = 0; r < n; ++r) o.push_back("step." + std::to_string(r) + ".et");
  return o;
}

TEST(ChakraReader, ATensorAndDataParallelTraceBecomesEachRanksOperations) {
  const auto ranks = testing::tp_dp_trace(4096, 8192, 50);
  auto p = parse_chakra(ranks, origins(8), testing::tp_dp_groups_json(), "groups.json");
  ASSERT_TRUE(p) << p.error().what();
  EXPECT_EQ(p->world, 8);
  // The groups file's disjoint groups of one size are one kind each.
  EXPECT_EQ(ranks_of(*p, "pg {1,2}", 5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(ranks_of(*p, "pg {3,4,5,6}", 5), (std::vector<int>{1, 5}));
  // Rank 4 receives from rank 0 on the pair's group (shared with data-parallel group "3").
  const auto& r4 = p->ranks[4];
  auto recv =
      std::find_if(r4.begin(), r4.end(), [](const Op& o) { return o.kind == OpKind::Recv; });
  ASSERT_NE(recv, r4.end());
  EXPECT_EQ(recv->peer, 0);
  EXPECT_EQ(p->groups[recv->group].ranks, (std::vector<int>{0, 4}));
  // The pair is data-parallel group "3" as well as the send's, and of that kind.
  EXPECT_EQ(p->groups[recv->group].kind, "pg {3,4,5,6}");
  EXPECT_EQ(r4.front().compute_ns, 50'000u);  // duration_micros
  auto t = simulate(*p, [](int, const Op& op) { return double(op.compute_ns + op.bytes); });
  ASSERT_TRUE(t) << t.error().what();
  EXPECT_GT(summarize(*p, *t).iteration_ns, 0);
}

TEST(ChakraReader, BadTracesAreRefusedNamingTheFileAndTheNode) {
  auto ranks = testing::tp_dp_trace(4096, 8192, 50);
  // Cut short inside a node.
  auto cut = ranks;
  cut[2].resize(cut[2].size() - 3);
  auto p = parse_chakra(cut, origins(8), testing::tp_dp_groups_json(), "groups.json");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().what().find("step.2.et: message"), std::string::npos) << p.error().what();
  EXPECT_NE(p.error().what().find("the file ends inside it"), std::string::npos);
  // A length prefix of 4 GiB (found by the fuzz lane: it overflowed the position's int).
  p = parse_chakra({std::string("\xff\xff\xff\xff\x77\x5c", 6)}, {"step.0.et"}, "", "");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().what().find("step.0.et: message 0 at byte 5"), std::string::npos)
      << p.error().what();
  // A group the groups file does not have.
  p = parse_chakra(ranks, origins(8), R"({"1": [0, 1, 2, 3]})", "groups.json");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().what().find("step.0.et: node"), std::string::npos) << p.error().what();
  EXPECT_NE(p.error().what().find("pg_name: no group '3'"), std::string::npos);
  // A groups file that is not JSON.
  p = parse_chakra(ranks, origins(8), "{1:", "groups.json");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().what().find("groups.json: byte"), std::string::npos) << p.error().what();
  // Rank 0's send without rank 4's trace: the receive has no match.
  p = parse_chakra({ranks.begin(), ranks.begin() + 4}, origins(4), "", "");
  ASSERT_FALSE(p);
}

}  // namespace
}  // namespace fabemu::replay
