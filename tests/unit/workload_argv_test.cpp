// The command lines `fabemu run` starts workloads with: the same benchmark under Gloo and MPI,
// mpirun entering hosts through `fabemu rsh`, transports chosen as the scenario says.
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/workload.h"

namespace fabemu {
namespace {

bool has_pair(const std::vector<std::string>& argv, const std::string& a, const std::string& b) {
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == a && argv[i + 1] == b) return true;
  return false;
}

WorkloadOptions options() {
  WorkloadOptions o;
  o.fabemu = "/opt/fabemu/bin/fabemu";
  o.collective = "/opt/fabemu/bin/fabemu-collective";
  return o;
}

TEST(WorkloadArgv, TransportAutoFollowsTheLabsRdma) {
  EXPECT_EQ(resolve_transport("auto", true), "ibverbs");
  EXPECT_EQ(resolve_transport("auto", false), "tcp");
  EXPECT_EQ(resolve_transport("tcp", true), "tcp");
}

TEST(WorkloadArgv, GlooRanksGetSizesRunIdPredictionsAndTimeout) {
  CollectiveStep c;
  c.collective = "alltoall";
  c.sizes = {65536, 1 << 20};
  c.iterations = 7;
  auto argv = collective_argv(options(), c, "gloo", "tcp", "run1", "/x/out.jsonl", "/x/p.json", 90);
  EXPECT_EQ(argv.front(), "/opt/fabemu/bin/fabemu-collective");
  EXPECT_TRUE(has_pair(argv, "--library", "gloo"));
  EXPECT_TRUE(has_pair(argv, "--collective", "alltoall"));
  EXPECT_TRUE(has_pair(argv, "--sizes", "65536,1048576"));
  EXPECT_TRUE(has_pair(argv, "--iterations", "7"));
  EXPECT_TRUE(has_pair(argv, "--transport", "tcp"));
  EXPECT_TRUE(has_pair(argv, "--run-id", "run1"));
  EXPECT_TRUE(has_pair(argv, "--json-out", "/x/out.jsonl"));
  EXPECT_TRUE(has_pair(argv, "--predict", "/x/p.json"));
  EXPECT_TRUE(has_pair(argv, "--timeout", "90"));
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--qps-per-peer"), argv.end());
  c.qps_per_peer = 4;
  EXPECT_TRUE(has_pair(collective_argv(options(), c, "gloo", "tcp", "r", "/o", "", 90),
                       "--qps-per-peer", "4"));
  // MPI ranks take their rank from mpirun and their transport from its MCA parameters.
  auto mpi = collective_argv(options(), c, "ucx", "ibverbs", "run1", "/o", "", 90);
  EXPECT_TRUE(has_pair(mpi, "--library", "mpi"));
  EXPECT_EQ(std::find(mpi.begin(), mpi.end(), "--transport"), mpi.end());
  EXPECT_EQ(std::find(mpi.begin(), mpi.end(), "--predict"), mpi.end());
}

TEST(WorkloadArgv, MpirunEntersHostsThroughTheRshAgent) {
  LabPaths lab;
  lab.lab = "demo";
  auto tcp = mpirun_argv(options(), lab, {"h1", "h2", "h3"}, "mpi", "tcp");
  EXPECT_EQ(tcp.front(), "mpirun");
  EXPECT_TRUE(has_pair(tcp, "-np", "3"));
  EXPECT_TRUE(has_pair(tcp, "--host", "h1:1,h2:1,h3:1"));
  EXPECT_TRUE(
      has_pair(tcp, "plm_rsh_agent", "/opt/fabemu/bin/fabemu rsh --run-dir /run/fabemu demo"));
  EXPECT_TRUE(has_pair(tcp, "btl", "tcp,self"));
  EXPECT_TRUE(has_pair(tcp, "pml", "ob1"));
  auto ucx = mpirun_argv(options(), lab, {"h1", "h2"}, "mpi", "ibverbs");
  EXPECT_TRUE(has_pair(ucx, "pml", "ucx"));
  EXPECT_TRUE(has_pair(ucx, "-x", "UCX_TLS=rc,ud,self"));
  auto ucx_tcp = mpirun_argv(options(), lab, {"h1", "h2"}, "ucx", "tcp");
  EXPECT_TRUE(has_pair(ucx_tcp, "pml", "ucx"));
  EXPECT_TRUE(has_pair(ucx_tcp, "-x", "UCX_TLS=tcp,self"));
}

TEST(WorkloadNote, SaysWhenTheMachineNotTheFabricSetTheSpeed) {
  EXPECT_EQ(ratio_note("{\"type\":\"result\",\"ratio\":0.93}\n{\"ratio\":1.01}\n"), "");
  EXPECT_EQ(ratio_note("{\"type\":\"summary\"}"), "");
  const std::string n = ratio_note("{\"ratio\":0.9}\n{\"ratio\":0.04}\n");
  EXPECT_NE(n.find("0.04x"), std::string::npos) << n;
}

}  // namespace
}  // namespace fabemu
