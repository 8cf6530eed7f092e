// `fabemu run` workloads on the running kernel: MPI across 8 hosts through the rsh agent, every
// Gloo collective, the torch.distributed example, and steps that fail or hang ending in a
// verdict that names the host or the timeout.
#include <gtest/gtest.h>

#include <regex>

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
  return fabemu({"run", s.path(), "--lab", lab, "--accept-degraded"}, timeout);
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
  EXPECT_NE(o.out.find("library mpi"), std::string::npos) << o;
  EXPECT_NE(o.out.find("ranks 8"), std::string::npos) << o;
  EXPECT_NE(o.out.find("wrong values: 0 OK"), std::string::npos) << o;
  EXPECT_NE(o.out.find("workload[0] allreduce (mpi, tcp): ok"), std::string::npos) << o;
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
  int i = 0;
  for (const char* c : {"allgather", "reducescatter", "alltoall", "broadcast"}) {
    EXPECT_NE(o.out.find("collective " + std::string(c) + " "), std::string::npos) << c << o;
    EXPECT_NE(o.out.find("workload[" + std::to_string(i++) + "] " + c + " (gloo, tcp): ok"),
              std::string::npos)
        << o;
  }
  std::regex ok("wrong values: 0 OK");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(o.out.begin(), o.out.end(), ok), std::sregex_iterator()),
      4)
      << o;
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
  EXPECT_NE(o.out.find("workload[0] exec sh -c exit 7: FAILED after"), std::string::npos) << o;
  EXPECT_NE(o.out.find("h3 exited with 7"), std::string::npos) << o;
  EXPECT_NE(o.out.find("workload[1] exec sleep 600: FAILED after"), std::string::npos) << o;
  EXPECT_NE(o.out.find("timed out after 2 s"), std::string::npos) << o;
  EXPECT_NE(o.out.find("workload[2] exec true: ok"), std::string::npos) << o;
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

TEST_F(WorkloadTest, GlooIbverbsAllreduceOverRxeIsCorrect) {
  SKIP_WITHOUT_RXE();
  const std::string name = lab_name("gib");
  LabGuard lab(name);
  TempScenario s(std::string(kRdmaFabric) + R"(
  - {collective: allreduce, library: gloo, transport: auto, sizes: [4K, 256K], iterations: 3}
  - {collective: allgather, library: gloo, transport: ibverbs, sizes: [64K], iterations: 2}
)");
  Outcome o = fabemu({"run", s.path(), "--lab", name}, 280s);
  EXPECT_EQ(o.status, 0) << o;
  EXPECT_NE(o.out.find("library gloo  transport ibverbs  ranks 4"), std::string::npos) << o;
  EXPECT_NE(o.out.find("workload[0] allreduce (gloo, ibverbs): ok"), std::string::npos) << o;
  EXPECT_NE(o.out.find("workload[1] allgather (gloo, ibverbs): ok"), std::string::npos) << o;
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
  program.insert(program.end(), {collective, "--library", "mpi", "--collective", "allreduce",
                                 "--sizes", "65536", "--iterations", "2"});
  o = lab.exec("h1", program);
  ASSERT_EQ(o.status, 0) << o;
  EXPECT_NE(o.out.find("wrong values: 0 OK"), std::string::npos) << o;
}

}  // namespace
}  // namespace fabemu::itest
