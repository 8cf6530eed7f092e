// `fabemu doctor` probes against the running kernel, cross-checked with iproute2 where possible.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "doctor/probe.h"
#include "util/netns.h"
#include "util/process.h"

namespace fabemu {
namespace {

const FeatureProbe* find(const std::vector<FeatureProbe>& probes, const std::string& id) {
  for (const FeatureProbe& p : probes)
    if (p.id == id) return &p;
  return nullptr;
}

std::set<std::string> host_interfaces() {
  std::set<std::string> names;
  if (struct if_nameindex* list = ::if_nameindex()) {
    for (struct if_nameindex* i = list; i->if_index != 0; ++i) names.insert(i->if_name);
    ::if_freenameindex(list);
  }
  return names;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string host_name() {
  utsname u{};
  ::uname(&u);
  return u.nodename;
}

// Cgroup directories the cgroup probes might have left behind, at the two depths where cgroup
// hierarchies are mounted (/sys/fs/cgroup and /sys/fs/cgroup/<controller>).
std::vector<std::string> leftover_probe_cgroups() {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  std::error_code ec;
  auto scan = [&](const fs::path& dir) {
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().filename().string().starts_with("fabemu-probe-"))
        found.push_back(e.path().string());
  };
  scan("/sys/fs/cgroup");
  for (const auto& e : fs::directory_iterator("/sys/fs/cgroup", ec))
    if (e.is_directory(ec)) scan(e.path());
  return found;
}

std::optional<std::string> find_tool(const std::string& name) {
  auto path = find_program(name);
  return path ? std::optional(*path) : std::nullopt;
}

// The independent check: does `tc qdisc add dev X root <kind>` succeed on a veth in a fresh
// namespace? Both commands enter a throwaway namespace (pinned in a temporary directory, gone
// with it), so the host's stays untouched. nullopt when the check itself could not be set up.
std::optional<bool> tc_accepts_root_qdisc(const std::string& ip, const std::string& tc,
                                          const std::string& kind) {
  char dir[] = "/run/fabemu-doctor-test-XXXXXX";
  if (!::mkdtemp(dir)) return std::nullopt;
  const std::string pin = std::string(dir) + "/ns";
  Result<UniqueFd> ns = make_error("not made");
  std::thread([&] { ns = create_pinned_namespace(pin, "", ""); }).join();
  std::optional<bool> accepted;
  if (ns) {
    const int fd = ns->get();
    CommandOptions in_ns;
    in_ns.before_exec = [fd]() -> Result<void> { return enter_namespace(fd, CLONE_NEWNET, "ns"); };
    auto veth =
        run_captured({ip, "link", "add", "fe-t0", "type", "veth", "peer", "name", "fe-t1"}, in_ns);
    if (veth && veth->status == 0) {
      auto qdisc = run_captured({tc, "qdisc", "add", "dev", "fe-t0", "root", kind}, in_ns);
      if (qdisc) accepted = qdisc->status == 0;
    }
    ns->reset();
  }
  (void)unpin_namespace(pin);
  std::filesystem::remove_all(dir);
  return accepted;
}

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the doctor's kernel probes need root";
  }
};

TEST_F(DoctorTest, CoreFeaturesWorkOnThisKernel) {
  std::vector<FeatureProbe> probes = probe_features();
  for (const char* id : {"netns", "veth", "bpf", "clsact"}) {
    const FeatureProbe* p = find(probes, id);
    ASSERT_NE(p, nullptr) << id;
    EXPECT_EQ(p->status, ProbeStatus::Yes) << id << ": " << p->detail;
  }
  for (const FeatureProbe& p : probes) {
    EXPECT_FALSE(p.detail.empty()) << p.id;
    EXPECT_FALSE(p.name.empty()) << p.id;
    EXPECT_FALSE(p.cost.empty()) << p.id;
  }
  KernelInfo kernel = kernel_info();
  std::cout << format_doctor_table(kernel, probes);
}

TEST_F(DoctorTest, QdiscVerdictsMatchTc) {
  std::optional<std::string> ip = find_tool("ip");
  std::optional<std::string> tc = find_tool("tc");
  if (!ip || !tc) GTEST_SKIP() << "iproute2 (ip, tc) is not installed";
  std::vector<FeatureProbe> probes = probe_features();
  for (const char* kind : {"fq", "netem", "htb"}) {
    std::optional<bool> accepted = tc_accepts_root_qdisc(*ip, *tc, kind);
    ASSERT_TRUE(accepted.has_value()) << "could not set up a namespace with a veth for " << kind;
    const FeatureProbe* p = find(probes, std::string("sch_") + kind);
    ASSERT_NE(p, nullptr) << kind;
    EXPECT_EQ(p->status == ProbeStatus::Yes, *accepted)
        << kind << ": the probe says " << to_string(p->status) << " (" << p->detail
        << ") but tc says " << (*accepted ? "yes" : "no");
  }
}

TEST_F(DoctorTest, ProbesLeaveTheHostUntouched) {
  std::set<std::string> interfaces = host_interfaces();
  std::string hostname = host_name();
  // The ECMP probe sets this sysctl to 1 in its own namespace only.
  const std::string kHashPolicy = "/proc/sys/net/ipv4/fib_multipath_hash_policy";
  std::string hash_policy = read_file(kHashPolicy);
  std::vector<FeatureProbe> probes = probe_features();
  EXPECT_EQ(host_interfaces(), interfaces);
  EXPECT_EQ(host_name(), hostname);
  EXPECT_EQ(read_file(kHashPolicy), hash_policy);
  EXPECT_EQ(leftover_probe_cgroups(), std::vector<std::string>{});
  const FeatureProbe* uts = find(probes, "uts_ns");
  ASSERT_NE(uts, nullptr);
  EXPECT_EQ(uts->status, ProbeStatus::Yes) << uts->detail;  // so the hostname check meant something
}

// Rendering needs no root: a feature's detail can hold anything the kernel said.
TEST(DoctorReport, JsonEscapesAndTableShowsCostOnlyWhenMissing) {
  KernelInfo kernel{"6.1.0-\"test\"", false};
  std::vector<FeatureProbe> probes = {
      {"sch_fq", "fq qdisc", ProbeStatus::No, "kernel said: \"no\"\n\tat\\x\x01", "no delay"},
      {"veth", "veth pairs", ProbeStatus::Yes, "created", "no links"},
  };
  std::string json = json_text(doctor_json(kernel, probes));
  EXPECT_EQ(json,
            "{\"schema\":1,\"command\":\"doctor\","
            "\"kernel\":{\"release\":\"6.1.0-\\\"test\\\"\",\"root\":false},\"features\":["
            "{\"id\":\"sch_fq\",\"name\":\"fq qdisc\",\"status\":\"no\","
            "\"detail\":\"kernel said: \\\"no\\\"\\n\\tat\\\\x\\u0001\",\"cost\":\"no delay\"},"
            "{\"id\":\"veth\",\"name\":\"veth pairs\",\"status\":\"yes\",\"detail\":\"created\","
            "\"cost\":\"no links\"}]}");
  std::string table = format_doctor_table(kernel, probes);
  EXPECT_NE(table.find("no delay"), std::string::npos) << table;
  EXPECT_EQ(table.find("no links"), std::string::npos) << table;
  EXPECT_NE(table.find("veth pairs  yes"), std::string::npos) << table;
}

}  // namespace
}  // namespace fabemu
