// `fabemu run` workloads on the running kernel: MPI across 8 hosts through the rsh agent, every
// Gloo collective, the torch.distributed example, and steps that fail or hang ending in a
// verdict that names the host or the timeout.
#include <gtest/gtest.h>

#include "doctor/rxe_support.h"
#include "lab_fixture.h"

namespace fabemu::itest {
namespace {

const char* kFabric = R"(
topology: {kind: leaf-spine, leaves: 4, spines: 2, hosts_per_leaf: 2}
fabric: {switch: router, ecmp_hash: l4, mtu: 1500}
rdma: {enabled: off}
)";

Outcome run_scenario(const std::string& lab, const std::string& workload,
                     std::chrono::milliseconds timeout = 240s) {
  TempScenario s("name: w" + std::string(kFabric) + "workload:\n" + workload);
  return fabemu({"run", s.path(), "--lab", lab, "--accept-degraded", "--json"}, timeout);
}

class WorkloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (namespaces)";
  }
};

TEST_F(WorkloadTest, MpiAllreduceAcrossEightHostsIsCorrect) {
  if (!find_tool("mpirun")) GTEST_SKIP() << "no mpirun (openmpi-bin)";
  const std::string name = lab_name("mpi");
  const Snapshot before = Snapshot::take(name);
  LabGuard lab(name);
  Outcome o = run_scenario(name, R"(
  - {collective: allreduce, library: mpi, transport: tcp, sizes: [4K, 256K], iterations: 3}
)");
  EXPECT_EQ(o.status, 0) << o;
  const nlohmann::json run = json_of(o);
  EXPECT_TRUE(step_ok_and_correct(run, 0, 2)) << o;
  // The step ran MPI over TCP, and the benchmark under it had a rank in each of the 8 hosts.
  const std::vector<nlohmann::json> steps = records_of(run, "step");
  ASSERT_EQ(steps.size(), 1u) << o;
  EXPECT_EQ(steps[0]["library"], "mpi") << steps[0];
  EXPECT_EQ(steps[0]["transport"], "tcp") << steps[0];
  for (const nlohmann::json& r : step_results(run, 0)) {
    EXPECT_EQ(r["library"], "mpi") << r;
    EXPECT_EQ(r["ranks"], 8) << r;
  }
  // mpirun's daemons went with the lab.
  EXPECT_EQ(Snapshot::take(name), before);
}

TEST_F(WorkloadTest, EveryGlooCollectiveIsCorrect) {
  const std::string name = lab_name("coll");
  LabGuard lab(name);
  std::string steps;
  for (const char* c : {"allgather", "reducescatter", "alltoall", "broadcast"})
    steps += std::string("  - {collective: ") + c + ", sizes: [8K, 512K], iterations: 2}\n";
  Outcome o = run_scenario(name, steps);
  EXPECT_EQ(o.status, 0) << o;
  const nlohmann::json run = json_of(o);
  int i = 0;
  for (const char* c : {"allgather", "reducescatter", "alltoall", "broadcast"}) {
    EXPECT_TRUE(step_ok_and_correct(run, i, 2)) << c << o;
    for (const nlohmann::json& r : step_results(run, i)) {
      EXPECT_EQ(r["collective"], c) << r;
      EXPECT_EQ(r["library"], "gloo") << r;
      EXPECT_EQ(r["transport"], "tcp") << r;
    }
    ++i;
  }
  EXPECT_EQ(records_of(run, "step").size(), 4u) << o;
}

TEST_F(WorkloadTest, TorchExampleFinishesWithTheRightSum) {
  Outcome probe = run({"/usr/bin/python3", "-c", "import torch.distributed"}, 60s);
  if (probe.status != 0) GTEST_SKIP() << "no torch for /usr/bin/python3 (python3-torch)";
  const std::string name = lab_name("torch");
  LabGuard lab(name);
  Outcome o = fabemu({"run", kSourceDir + "/scenarios/torch-allreduce.yaml", "--lab", name}, 280s);
  EXPECT_EQ(o.status, 0) << o;
  EXPECT_NE(o.out.find("all_reduce of 1048576 floats = 36 (expect 36), 0 wrong"), std::string::npos)
      << o;
  EXPECT_NE(o.out.find("torch.distributed all_reduce across 8 hosts: correct"), std::string::npos)
      << o;
}

TEST_F(WorkloadTest, FailingAndHangingStepsEndInAVerdict) {
  const std::string name = lab_name("fail");
  const Snapshot before = Snapshot::take(name);
  LabGuard lab(name);
  const auto start = Clock::now();
  Outcome o = run_scenario(name, R"(
  - exec: {hosts: [h3], command: ["sh", "-c", "exit 7"]}
  - exec: {hosts: all, command: ["sleep", "600"], timeout: 2s}
  - exec: {hosts: [h1, h2], command: ["true"]}
)");
  EXPECT_LT(Clock::now() - start, 60s) << o;
  EXPECT_EQ(o.status, 1) << o;
  // Each verdict says why: the host and its exit status, or the timeout.
  const std::vector<nlohmann::json> steps = records_of(json_of(o), "step");
  ASSERT_EQ(steps.size(), 3u) << o;
  EXPECT_FALSE(steps[0]["ok"]) << steps[0];
  EXPECT_EQ(steps[0]["failure"], "h3 exited with 7") << steps[0];
  EXPECT_FALSE(steps[1]["ok"]) << steps[1];
  EXPECT_TRUE(steps[1]["failure"].get<std::string>().starts_with("timed out after 2 s"))
      << steps[1];
  EXPECT_TRUE(steps[2]["ok"]) << steps[2];
  EXPECT_EQ(Snapshot::take(name), before);
}

// ---------------------------------------------------------------------------------------------
// Over soft-RoCE: kernels >= 7.1 (the VM lane). 4 hosts on 2 leaves, so every ring crosses the
// spines.

const char* kRdmaFabric = R"(name: wr
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
fabric: {switch: router, ecmp_hash: l4, mtu: 1500}
rdma: {enabled: on}
workload:
)";

#define SKIP_WITHOUT_RXE()                                                  \
  if (auto rxe = doctor::rxe_support("/run/fabemu/rxe-probe"); !rxe.usable) \
  GTEST_SKIP() << "no rxe between namespaces on this kernel: " << rxe.reason

// qps_per_peer: each peer over several connections, the buffer split across them (sizes whose
// elements do not divide by 3), every element still right.
TEST_F(WorkloadTest, SeveralConnectionsPerPeerSplitTheBufferAndStayCorrect) {
  const std::string name = lab_name("qps");
  LabGuard lab(name);
  std::string steps;
  for (const char* c : {"allreduce", "alltoall", "broadcast"})
    steps += std::string("  - {collective: ") + c +
             ", sizes: [8K, 520K], iterations: 2, qps_per_peer: 3}\n";
  Outcome o = run_scenario(name, steps);
  EXPECT_EQ(o.status, 0) << o;
  const nlohmann::json run = json_of(o);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(step_ok_and_correct(run, i, 2)) << i << o;
}

TEST_F(WorkloadTest, GlooIbverbsAllreduceOverRxeIsCorrect) {
  SKIP_WITHOUT_RXE();
  const std::string name = lab_name("gib");
  LabGuard lab(name);
  TempScenario s(std::string(kRdmaFabric) + R"(
  - {collective: allreduce, library: gloo, transport: auto, sizes: [4K, 256K], iterations: 3}
  - {collective: allgather, library: gloo, transport: ibverbs, sizes: [64K], iterations: 2}
  - {collective: alltoall, library: gloo, transport: ibverbs, sizes: [64K], iterations: 2, qps_per_peer: 2}
)");
  Outcome o = fabemu({"run", s.path(), "--lab", name, "--json"}, 280s);
  EXPECT_EQ(o.status, 0) << o;
  const nlohmann::json run = json_of(o);
  // transport: auto picked ibverbs in a lab with rxe; every step ran over it, 4 ranks (the
  // alltoall over two queue pairs per peer).
  for (int step : {0, 1, 2}) {
    EXPECT_TRUE(step_ok_and_correct(run, step, 1)) << o;
    for (const nlohmann::json& r : step_results(run, step)) {
      EXPECT_EQ(r["library"], "gloo") << r;
      EXPECT_EQ(r["transport"], "ibverbs") << r;
      EXPECT_EQ(r["ranks"], 4) << r;
    }
  }
}

// MPI over UCX on rxe is not tested: with Debian's UCX 1.13 the ranks find no rc/ud resources
// on the rxe devices under mpirun, and ucx_perftest between two rxe hosts fails with UD
// endpoint timeouts (ibv_ud_pingpong works between the same hosts). See the issue's notes.

}  // namespace
}  // namespace fabemu::itest

namespace fabemu::itest {
namespace {

// Your own MPI program, as `fabemu rsh --help` and the README show it: mpirun started in one
// host with `fabemu rsh LAB` as its remote shell puts one rank in each listed host (each says
// its own hostname) and a real MPI program's allreduce across them is correct.
TEST_F(WorkloadTest, MpirunThroughFabemuRshAsDocumented) {
  if (!find_tool("mpirun")) GTEST_SKIP() << "no mpirun (openmpi-bin)";
  TempScenario sc("name: rsh" + std::string(kFabric));
  LabGuard lab(lab_name("rsh"));
  ASSERT_EQ(lab.up(sc.path()).status, 0);
  const Argv mpirun = {"mpirun",
                       "--allow-run-as-root",
                       "-np",
                       "4",
                       "--host",
                       "h1,h3,h5,h7",
                       "--mca",
                       "plm_rsh_agent",
                       kFabemu + " rsh " + lab.name(),
                       "--mca",
                       "plm_rsh_no_tree_spawn",
                       "1",
                       "--mca",
                       "routed",
                       "direct",
                       "--mca",
                       "pml",
                       "ob1",
                       "--mca",
                       "btl",
                       "tcp,self"};
  Argv hostnames = mpirun;
  hostnames.push_back("hostname");
  Outcome o = lab.exec("h1", hostnames);
  ASSERT_EQ(o.status, 0) << o;
  for (const char* h : {"h1\n", "h3\n", "h5\n", "h7\n"})
    EXPECT_NE(o.out.find(h), std::string::npos) << h << o;
  Argv program = mpirun;
  const std::string collective =
      std::filesystem::path(kFabemu).parent_path().string() + "/collective/fabemu-collective";
  // Its results as JSON lines where every host, and this test, sees them: the lab's shared
  // directory (a host's /tmp is its own).
  const std::string results = run_dir(lab.name()) + "/shared/rsh-allreduce.jsonl";
  program.insert(program.end(), {collective, "--library", "mpi", "--collective", "allreduce",
                                 "--sizes", "65536", "--iterations", "2", "--json-out", results});
  o = lab.exec("h1", program);
  ASSERT_EQ(o.status, 0) << o;
  int sizes = 0;
  std::istringstream lines(read_text(results));
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("type", "") != "result") continue;
    ++sizes;
    EXPECT_EQ(j["wrong"], 0) << line;
    EXPECT_EQ(j["ranks"], 4) << line;
  }
  EXPECT_EQ(sizes, 1) << o;
}

}  // namespace
}  // namespace fabemu::itest
