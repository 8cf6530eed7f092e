// `fabemu doctor` probes against the running kernel, cross-checked with iproute2 where possible.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <sched.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "doctor/probe.h"
#include "util/netns.h"

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
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    std::string path = std::string(dir) + "/" + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return std::nullopt;
}

// Runs argv in a child and returns its exit status (-1 when it did not exit normally).
int run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    // iproute2's complaints ("Specified qdisc kind is unknown") are expected; keep logs clean.
    int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The independent check: does `tc qdisc add dev X root <kind>` succeed on a veth in a fresh
// namespace? A forked child unshares the namespace, so the host's stays untouched, and runs
// ip and tc from there. Returns nullopt when the check itself could not be set up.
std::optional<bool> tc_accepts_root_qdisc(const std::string& ip, const std::string& tc,
                                          const std::string& kind) {
  std::vector<std::string> add_veth = {ip,     "link", "add",  "fe-t0", "type",
                                       "veth", "peer", "name", "fe-t1"};
  std::vector<std::string> add_qdisc = {tc, "qdisc", "add", "dev", "fe-t0", "root", kind};
  pid_t pid = ::fork();
  if (pid == 0) {
    if (unshare_retrying(CLONE_NEWNET) != 0) ::_exit(2);
    if (run(add_veth) != 0) ::_exit(3);
    ::_exit(run(add_qdisc) == 0 ? 0 : 1);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return std::nullopt;
  if (WEXITSTATUS(status) > 1) return std::nullopt;
  return WEXITSTATUS(status) == 0;
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
  std::string json = doctor_json(kernel, probes);
  EXPECT_EQ(json,
            "{\"kernel\":{\"release\":\"6.1.0-\\\"test\\\"\",\"root\":false},\"features\":["
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
