// Programs' clocks and /tmp in hosts, without a kernel: the environment `clock: fabric` gives,
// where its libraries are looked for, which hosts get a private /tmp, and the check that names
// it when a command's file is in the machine's /tmp only.
#include "util/host_clock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "fake_lab.h"
#include "runtime/host_env.h"
#include "runtime/private_tmp.h"

namespace fabemu {
namespace {

namespace fs = std::filesystem;
using unit::load;

constexpr const char* kLab = R"(name: c
time_scale: 20
topology: {kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 2}
)";

// A fresh directory under the test's temporary directory, removed at the end.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::path(::testing::TempDir()) /
             ("fabemu-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  void touch(const std::string& rel) const {
    fs::create_directories((path / rel).parent_path());
    std::ofstream(path / rel) << "x";
  }
};

std::map<std::string, std::string> env_map(
    const std::vector<std::pair<std::string, std::string>>& e) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : e) m[k] = v;
  return m;
}

TEST(HostClock, FabricClockPreloadsBothLibrariesAheadOfTheCallersAndSlowsNTimes) {
  const ClockLibraries libs{"/l/libfaketime.so.1", "/f/libfabemu-clockwait.so"};
  auto env = env_map(fabric_clock_env(20, libs, ""));
  // libfaketime first: the clockwait library's clock_gettime must be libfaketime's.
  EXPECT_EQ(env["LD_PRELOAD"], "/l/libfaketime.so.1:/f/libfabemu-clockwait.so");
  EXPECT_EQ(env["FAKETIME"], "+0 x0.05");
  EXPECT_EQ(env["FAKETIME_DONT_FAKE_MONOTONIC"], "0");
  EXPECT_EQ(env.count("NO_FAKE_STAT"), 1u);
  EXPECT_EQ(env_map(fabric_clock_env(3, libs, "/u/mine.so"))["LD_PRELOAD"],
            "/l/libfaketime.so.1:/f/libfabemu-clockwait.so:/u/mine.so");
  EXPECT_EQ(env_map(fabric_clock_env(3, libs, ""))["FAKETIME"], "+0 x0.333333333333");
  EXPECT_EQ(env_map(fabric_clock_env(4000, libs, ""))["FAKETIME"], "+0 x0.00025");
}

TEST(HostClock, LibrariesAreFoundOrNamedWithThePackage) {
  TempDir d("clocklibs");
  d.touch("faketime/libfaketime.so.1");
  d.touch("bin/clock/libfabemu-clockwait.so");
  d.touch("usr/lib/fabemu/libfabemu-clockwait.so");
  d.touch("usr/bin/fabemu");
  const std::string ft = (d.path / "faketime").string();
  auto built = find_clock_libraries((d.path / "bin/fabemu").string(), {"/nonexistent", ft});
  ASSERT_TRUE(built) << built.error().what();
  EXPECT_EQ(built->faketime, ft + "/libfaketime.so.1");
  EXPECT_EQ(built->clockwait, (d.path / "bin/clock/libfabemu-clockwait.so").string());
  auto installed = find_clock_libraries((d.path / "usr/bin/fabemu").string(), {ft});
  ASSERT_TRUE(installed) << installed.error().what();
  EXPECT_EQ(installed->clockwait,
            (d.path / "usr/bin/../lib/fabemu/libfabemu-clockwait.so").string());

  auto no_faketime = find_clock_libraries((d.path / "bin/fabemu").string(), {"/nonexistent"});
  ASSERT_FALSE(no_faketime);
  EXPECT_EQ(errno_of(no_faketime.error()), EOPNOTSUPP);
  EXPECT_NE(no_faketime.error().message.find("install the libfaketime package"), std::string::npos);
  auto no_clockwait = find_clock_libraries((d.path / "nowhere/fabemu").string(), {ft});
  ASSERT_FALSE(no_clockwait);
  EXPECT_NE(no_clockwait.error().message.find("libfabemu-clockwait.so"), std::string::npos);
}

TEST(HostClock, WallClockAndRealTimeLabsPreloadNothing) {
  LabPaths paths;
  paths.lab = "c";
  auto m = build_model(load(kLab), 0);
  ASSERT_TRUE(m);
  m->time_scale.factor = 20;
  // The scenario's default is the wall clock, whatever the lab's factor.
  auto wall = program_context(*m, paths, m->topo.find("h1"));
  ASSERT_TRUE(wall);
  EXPECT_EQ(env_map(wall->env).count("FAKETIME"), 0u);
  auto asked_wall = program_context(*m, paths, m->topo.find("h1"), HostClock::Wall);
  ASSERT_TRUE(asked_wall);
  EXPECT_EQ(env_map(asked_wall->env).count("LD_PRELOAD"), 0u);
  // A switch runs the machine's clock: clock: fabric is for programs in hosts.
  auto sw = program_context(*m, paths, m->topo.find("leaf1"), HostClock::Fabric);
  ASSERT_TRUE(sw);
  EXPECT_EQ(env_map(sw->env).count("FAKETIME"), 0u);
}

TEST(HostTmp, PrivateUnlessTheScenarioSharesTheMachines) {
  LabPaths paths;
  paths.lab = "c";
  auto priv = build_model(load(kLab), 0);
  ASSERT_TRUE(priv);
  EXPECT_EQ(node_context(*priv, paths, priv->topo.find("h2")).tmp_dir, paths.host_tmp("h2"));
  auto shared = build_model(load(std::string(kLab) + "hosts: {tmp: shared}\n"), 0);
  ASSERT_TRUE(shared);
  EXPECT_EQ(node_context(*shared, paths, shared->topo.find("h2")).tmp_dir, "");
}

TEST(HostTmp, AFileInTheMachinesTmpOnlyIsNamedWithTheWaysOut) {
  TempDir machine("machine-tmp"), host("host-tmp");
  machine.touch("job/a.py");
  machine.touch("both.py");
  host.touch("both.py");
  NodeContext c;
  c.node = "h1";
  c.host = true;
  c.tmp_dir = host.path.string();
  c.env = {{"FABEMU_SHARED_DIR", "/run/fabemu/c/shared"}};
  const std::string mt = machine.path.string();
  auto missing = check_private_tmp(c, {"python3", "/tmp/job/a.py"}, "/root", mt);
  ASSERT_FALSE(missing);
  const std::string& e = missing.error().message;
  EXPECT_NE(e.find("/tmp/job/a.py is in this machine's /tmp, not in h1's"), std::string::npos) << e;
  EXPECT_NE(e.find(host.path.string()), std::string::npos) << e;
  EXPECT_NE(e.find("$FABEMU_SHARED_DIR, /run/fabemu/c/shared"), std::string::npos) << e;
  EXPECT_NE(e.find("hosts: {tmp: shared}"), std::string::npos) << e;
  // In both, in neither (the program's own business), not a path, or under the working
  // directory (which the host sees at the same path): nothing to say.
  EXPECT_TRUE(check_private_tmp(c, {"python3", "/tmp/both.py"}, "/root", mt));
  EXPECT_TRUE(check_private_tmp(c, {"touch", "/tmp/new"}, "/root", mt));
  EXPECT_TRUE(check_private_tmp(c, {"echo", "tmp/job/a.py", "/tmp/"}, "/root", mt));
  EXPECT_TRUE(check_private_tmp(c, {"python3", "/tmp/job/a.py"}, "/tmp/job", mt));
  EXPECT_FALSE(check_private_tmp(c, {"python3", "/tmp/job/a.py"}, "/tmp/jo", mt));
  // A host that shares the machine's /tmp sees it all.
  c.tmp_dir.clear();
  EXPECT_TRUE(check_private_tmp(c, {"python3", "/tmp/job/a.py"}, "/root", mt));
}

}  // namespace
}  // namespace fabemu
