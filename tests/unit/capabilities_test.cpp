// The capability module against a fake kernel: what `up` builds with, what it refuses and why,
// what it never asks, and the doctor's rows from the same answers.
#include "doctor/capabilities.h"

#include <gtest/gtest.h>

#include <map>

#include "fake_lab.h"

namespace fabemu {
namespace {

using unit::load;
using unit::model_of;

// A kernel whose every answer the test sets; counts what was asked.
struct FakeProbe : KernelProbe {
  Capability fq_ = {ProbeStatus::Yes, "fq ok"}, htb_ = {ProbeStatus::Yes, "htb ok"};
  LinkModelCapability lm_ = {
      {ProbeStatus::Yes, "loads"}, {ProbeStatus::Yes, "tcx"}, {ProbeStatus::Yes, "clsact"}};
  Capability ovs_kernel_ = {ProbeStatus::Yes, "module"}, ovs_user_ = {ProbeStatus::Yes, "tools"};
  Capability rxe_ = {ProbeStatus::Yes, "rc pingpong ok"};
  Capability pfc_qdisc_ = {ProbeStatus::No, "no BPF qdiscs"};
  Capability ecmp_seed_ = {ProbeStatus::Yes, "fib_multipath_hash_seed"};
  std::map<std::string, Capability> cgroups_ = {{"cpu", {ProbeStatus::Yes, "v2"}},
                                                {"memory", {ProbeStatus::Yes, "v2"}}};
  std::optional<std::vector<std::string>> cc_ = std::vector<std::string>{"reno", "cubic"};
  std::optional<Capacity> capacity_;  // kept this boot
  std::optional<Capacity> measured_;  // what a calibration now would find
  std::map<std::string, int> asked;

  Capability fq() override { return ++asked["fq"], fq_; }
  Capability htb() override { return ++asked["htb"], htb_; }
  LinkModelCapability link_model() override { return ++asked["link_model"], lm_; }
  Capability pfc_qdisc() override { return ++asked["pfc_qdisc"], pfc_qdisc_; }
  Capability ovs_kernel() override { return ++asked["ovs_kernel"], ovs_kernel_; }
  Capability ovs_userspace() override { return ++asked["ovs_userspace"], ovs_user_; }
  Capability rxe() override { return ++asked["rxe"], rxe_; }
  Capability cgroup(const std::string& c) override { return ++asked["cgroup_" + c], cgroups_[c]; }
  std::optional<std::vector<std::string>> congestion_controls() override {
    return ++asked["cc"], cc_;
  }
  Capability ecmp_seed() override { return ++asked["ecmp_seed"], ecmp_seed_; }
  std::optional<Capacity> capacity(bool measure, std::string& why, CapacityKind kind) override {
    ++asked[std::string(measure ? "calibrate" : "capacity") + " " + to_string(kind)];
    if (capacity_) return capacity_;
    if (measure && measured_) return measured_;
    why = measure ? "calibration failed" : "not calibrated";
    return std::nullopt;
  }
};

constexpr const char* kShaped = R"(name: c
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
links: {default: {rate: 1gbit}}
)";

constexpr const char* kDelayed = R"(name: c
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
links: {default: {rate: 1gbit, delay: 5us}}
rdma: {enabled: off}
)";

Result<PlanOptions> choose(FakeProbe& probe, const std::string& yaml, ChoiceOptions o = {}) {
  Capabilities caps(probe);
  return choose_plan_options(model_of(yaml), caps, o);
}

TEST(Capabilities, AFullKernelGetsFqRxeAndTheOvsKernelDatapath) {
  FakeProbe p;
  auto o = choose(p, std::string(kShaped) + "fabric: {switch: ovs}\n");
  ASSERT_TRUE(o) << o.error().what();
  EXPECT_TRUE(o->fq);
  EXPECT_TRUE(o->rdma.rxe);
  EXPECT_TRUE(o->ovs.kernel);
  EXPECT_EQ(shaping_mode_name(*o), "fq");
}

TEST(Capabilities, WithoutFqHtbHoldsTheRateAndWithoutHtbThePolicerDoes) {
  FakeProbe p;
  p.fq_ = {ProbeStatus::No, "ENOENT fq"};
  auto o = choose(p, kShaped);
  ASSERT_TRUE(o);
  EXPECT_EQ(shaping_mode_name(*o), "htb");
  EXPECT_EQ(o->no_fq_reason, "sch_fq: ENOENT fq");
  p.htb_ = {ProbeStatus::No, "ENOENT htb"};
  o = choose(p, kShaped);
  ASSERT_TRUE(o);
  EXPECT_EQ(shaping_mode_name(*o), "policer");
}

TEST(Capabilities, DelayWithoutFqIsRefusedWithTheReasonUnlessAccepted) {
  FakeProbe p;
  p.fq_ = {ProbeStatus::No, "ENOENT fq"};
  auto o = choose(p, kDelayed);
  ASSERT_FALSE(o);
  EXPECT_EQ(errno_of(o.error()), EOPNOTSUPP);
  EXPECT_NE(o.error().message.find("delay 5us"), std::string::npos) << o.error().message;
  EXPECT_NE(o.error().message.find("ENOENT fq"), std::string::npos);
  EXPECT_NE(o.error().message.find("--accept-degraded"), std::string::npos);
  ChoiceOptions accept;
  accept.accept_degraded = true;
  EXPECT_TRUE(choose(p, kDelayed, accept));
}

// PFC holding frames in the queue needs the BPF qdisc; nothing else asks for it.
TEST(Capabilities, HoldInTheQueueNeedsTheBpfQdiscAndPortsGetIt) {
  const std::string yaml = std::string(kShaped) +
                           "fabric: {lossless: {dscp: [26], hold: queue}}\nrdma: {enabled: off}\n";
  FakeProbe p;
  auto o = choose(p, yaml);
  ASSERT_FALSE(o);
  EXPECT_EQ(errno_of(o.error()), EOPNOTSUPP);
  EXPECT_NE(o.error().message.find("fabric.lossless.hold: queue needs fabemu's BPF qdisc"),
            std::string::npos)
      << o.error().message;
  EXPECT_NE(o.error().message.find("no BPF qdiscs"), std::string::npos);
  FakeProbe other;
  EXPECT_TRUE(choose(other, kDelayed));
  EXPECT_EQ(other.asked.count("pfc_qdisc"), 0u);

  p.pfc_qdisc_ = {ProbeStatus::Yes, "loads"};
  o = choose(p, yaml);
  ASSERT_TRUE(o) << o.error().what();
  const LabModel m = model_of(yaml);
  LabPaths paths;
  paths.lab = "c";
  const Plan plan = make_plan(m, paths, 0, *o);
  size_t queue_ports = 0, loads = 0;
  for (const auto& a : plan.actions) {
    if (const auto* s = std::get_if<ShapePort>(&a)) {
      EXPECT_EQ(s->pfc_qdisc, pfc_qdisc_kind("c"));
      EXPECT_FALSE(s->fq);  // the BPF qdisc honours the departure times instead
      queue_ports += !s->pfc_qdisc.empty();
    }
    if (const auto* l = std::get_if<LoadShaper>(&a)) loads += l->pfc_qdisc == pfc_qdisc_kind("c");
  }
  EXPECT_EQ(queue_ports, 2 * m.topo.links.size());
  EXPECT_EQ(loads, 1u);
  // A kind of tc's length (15 characters at most), the same for a name every time.
  EXPECT_EQ(pfc_qdisc_kind("c").size(), 15u);
  EXPECT_EQ(pfc_qdisc_kind("c").substr(0, 2), "fp");
  EXPECT_NE(pfc_qdisc_kind("c"), pfc_qdisc_kind("d"));
}

TEST(Capabilities, UnknownFqPlansFqForADryRunWithoutRoot) {
  FakeProbe p;
  p.fq_ = {ProbeStatus::Unknown, "not probed: needs root"};
  auto o = choose(p, kDelayed);
  ASSERT_TRUE(o);
  EXPECT_TRUE(o->fq);
}

TEST(Capabilities, RdmaOnWithoutRxeIsRefusedAutoGoesWithoutOffNeverAsks) {
  FakeProbe p;
  p.rxe_ = {ProbeStatus::No, "this kernel has no rdma_rxe"};
  auto on = choose(p, std::string(kShaped) + "rdma: {enabled: on}\n");
  ASSERT_FALSE(on);
  EXPECT_NE(on.error().message.find("rdma.enabled: on"), std::string::npos);
  EXPECT_NE(on.error().message.find("no rdma_rxe"), std::string::npos);
  auto autom = choose(p, kShaped);
  ASSERT_TRUE(autom);
  EXPECT_FALSE(autom->rdma.rxe);
  EXPECT_EQ(autom->rdma.why_not, "this kernel has no rdma_rxe");
  FakeProbe q;
  auto off = choose(q, kDelayed);
  ASSERT_TRUE(off);
  EXPECT_EQ(off->rdma.why_not, "rdma.enabled: off");
  EXPECT_EQ(q.asked.count("rxe"), 0u);
}

TEST(Capabilities, DcqcnNeedsRxeFqAndALineRateAboveItsMinimumOnEveryHost) {
  const std::string dcqcn =
      "name: c\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}\n"
      "links: {default: {rate: 25gbit}}\nrdma: {cc: dcqcn}\n";
  FakeProbe full;
  EXPECT_TRUE(choose(full, dcqcn));
  FakeProbe no_rxe;
  no_rxe.rxe_ = {ProbeStatus::No, "this kernel has no rdma_rxe"};
  auto r = choose(no_rxe, dcqcn);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("rdma.cc: dcqcn runs over soft-RoCE"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("no rdma_rxe"), std::string::npos);
  FakeProbe no_fq;
  no_fq.fq_ = {ProbeStatus::No, "ENOENT fq"};
  r = choose(no_fq, dcqcn);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("needs the fq qdisc: sch_fq: ENOENT fq"), std::string::npos)
      << r.error().message;
  r = choose(full,
             "name: c\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}\n"
             "rdma: {cc: dcqcn}\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("needs a rate on every host's link"), std::string::npos);
  r = choose(full, std::string(kShaped) + "rdma: {cc: dcqcn, dcqcn: {min_rate: 1gbit}}\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("dcqcn.min_rate (1gbit) must be below the line rate of h1"),
            std::string::npos)
      << r.error().message;
  FakeProbe unknown;  // a dry run without root plans rxe
  unknown.rxe_ = {ProbeStatus::Unknown, "not probed: needs root"};
  EXPECT_TRUE(choose(unknown, dcqcn));
}

TEST(Capabilities, OvsKernelDatapathWithoutTheModuleIsRefusedAutoFallsBack) {
  FakeProbe p;
  p.ovs_kernel_ = {ProbeStatus::No, "no openvswitch kernel module"};
  auto kernel = choose(p, std::string(kShaped) + "fabric: {switch: ovs, ovs_datapath: kernel}\n");
  ASSERT_FALSE(kernel);
  EXPECT_NE(kernel.error().message.find("fabric.ovs_datapath: kernel"), std::string::npos);
  auto autom = choose(p, std::string(kShaped) + "fabric: {switch: ovs}\n");
  ASSERT_TRUE(autom);
  EXPECT_FALSE(autom->ovs.kernel);
  EXPECT_EQ(autom->ovs.why_userspace, "no openvswitch kernel module");
  p.ovs_user_ = {ProbeStatus::No, "Open vSwitch is not installed"};
  auto missing = choose(p, std::string(kShaped) + "fabric: {switch: ovs}\n");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("not installed"), std::string::npos);
  // A router fabric never asks about OVS.
  FakeProbe q;
  ASSERT_TRUE(choose(q, kShaped));
  EXPECT_EQ(q.asked.count("ovs_kernel") + q.asked.count("ovs_userspace"), 0u);
}

TEST(Capabilities, LimitsNeedTheirCgroupControllerAndCongestionControlMustBeAllowed) {
  FakeProbe p;
  p.cgroups_["memory"] = {ProbeStatus::No, "no memory hierarchy"};
  auto cpu = choose(p, std::string(kShaped) + "hosts: {cpu: 0.5}\n");
  EXPECT_TRUE(cpu);
  auto mem = choose(p, std::string(kShaped) + "hosts: {memory: 512M}\n");
  ASSERT_FALSE(mem);
  EXPECT_NE(mem.error().message.find("hosts: memory limits"), std::string::npos);
  EXPECT_NE(mem.error().message.find("no memory hierarchy"), std::string::npos);
  auto bad_cc = choose(p, std::string(kShaped) + "hosts: {tcp_congestion: dctcp}\n");
  ASSERT_FALSE(bad_cc);
  EXPECT_NE(bad_cc.error().message.find("allowed: reno cubic"), std::string::npos);
  EXPECT_TRUE(choose(p, std::string(kShaped) + "hosts: {tcp_congestion: cubic}\n"));
}

TEST(Capabilities, ShapedLinksNeedALinkModelThatLoadsAndAttaches) {
  FakeProbe p;
  p.lm_.tcx = {ProbeStatus::No, "EINVAL tcx"};
  EXPECT_TRUE(choose(p, kShaped));  // clsact is enough
  p.lm_.clsact = {ProbeStatus::No, "EOPNOTSUPP clsact"};
  auto o = choose(p, kShaped);
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().message.find("cannot be attached"), std::string::npos);
  p.lm_.load = {ProbeStatus::No, "EPERM loading"};
  o = choose(p, kShaped);
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().message.find("EPERM loading"), std::string::npos);
}

TEST(Capabilities, EachAnswerIsAskedOnceAndTheDoctorRowsAreTheSameAnswers) {
  FakeProbe p;
  p.fq_ = {ProbeStatus::No, "ENOENT fq"};
  Capabilities caps(p);
  ASSERT_TRUE(choose_plan_options(model_of(kShaped), caps));
  const auto rows = capability_rows(caps);
  for (const auto& [what, n] : p.asked) EXPECT_EQ(n, 1) << what;
  std::map<std::string, FeatureProbe> by_id;
  for (const auto& r : rows) by_id[r.id] = r;
  EXPECT_EQ(by_id["sch_fq"].status, ProbeStatus::No);
  EXPECT_EQ(by_id["sch_fq"].detail, "ENOENT fq");
  EXPECT_EQ(by_id["sch_htb"].status, ProbeStatus::Yes);
  EXPECT_EQ(by_id["tcx"].detail, "tcx");
  EXPECT_EQ(by_id["tcp_congestion"].detail, "hosts.tcp_congestion may be one of: reno cubic");
  for (const char* id : {"bpf", "clsact", "tcx", "sch_fq", "sch_htb", "ovs_kernel", "ovs_userspace",
                         "rxe", "cgroup_cpu", "cgroup_memory", "tcp_congestion"})
    EXPECT_TRUE(by_id.count(id)) << id;
}

TEST(Capabilities, BridgeSwitchesAreRefused) {
  FakeProbe p;
  auto o = choose(p, std::string(kShaped) + "fabric: {switch: bridge}\n");
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().message.find("'bridge' is not implemented"), std::string::npos);
}

}  // namespace
}  // namespace fabemu
