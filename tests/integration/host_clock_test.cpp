// Hosts' clocks and /tmp against the real kernel: with `hosts: {clock: fabric}` a program's own
// clocks, sleeps and timeouts run N times slower (a `sleep 1` takes N s of wall clock, Python
// times it as 1 s), `exec --clock wall` undoes it; a command naming a file of the machine's
// /tmp fails on a host with a private /tmp, naming it, and runs with `hosts: {tmp: shared}`.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "lab_fixture.h"

namespace fabemu::itest {
namespace {

// Two hosts behind one switch; the links unshaped, so nothing but the clock is dilated.
std::string two_hosts(const std::string& name, const std::string& extra) {
  return "name: " + name + R"(
topology:
  kind: explicit
  nodes: [{name: h1, role: host}, {name: sw, role: switch}, {name: h2, role: host}]
  links: [{a: h1, b: sw}, {a: sw, b: h2}]
rdma: {enabled: off}
)" + extra;
}

double seconds_of(const Argv& command, Outcome& o, std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  o = fabemu(command, timeout);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class HostsTest : public LabTest {};

TEST_F(HostsTest, AFabricClockRunsNTimesSlowerThanTheWallInEveryHost) {
  constexpr int kScale = 10;
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  TempScenario sc(
      two_hosts("ck", "time_scale: " + std::to_string(kScale) + "\nhosts: {clock: fabric}\n"));
  LabGuard lab(lab_name("ck"));
  Outcome up = lab.up(sc.path());
  if (up.status == 5 && up.err.find("hosts.clock: fabric needs") != std::string::npos)
    GTEST_SKIP() << "clock: fabric is unsupported here: " << up.err;
  ASSERT_EQ(up.status, 0) << up;

  // `sleep 1` in a host: N seconds of the machine's time.
  Outcome o;
  const double wall = seconds_of({"exec", lab.name() + ":h1", "--", "sleep", "1"}, o, 60s);
  EXPECT_EQ(o.status, 0) << o;
  EXPECT_GT(wall, 0.7 * kScale) << "sleep 1 on the fabric's clock took " << wall << " s of wall";
  EXPECT_LT(wall, 2.0 * kScale) << "sleep 1 on the fabric's clock took " << wall << " s of wall";

  // Python in every host times a sleep and a timed wait (which libfaketime alone leaves on the
  // kernel's clock) as the fabric's second they are, and its wall clock (times(2), which
  // libfaketime leaves alone) as N of them.
  const std::string program =
      "import os, threading, time\n"
      "w, t, p = os.times().elapsed, time.time(), time.perf_counter()\n"
      "time.sleep(0.5)\n"
      "threading.Event().wait(0.5)\n"
      "print('fabric %.3f %.3f wall %.3f' % (time.perf_counter() - p, time.time() - t,\n"
      "      os.times().elapsed - w))\n";
  const double all_wall =
      seconds_of({"exec", lab.name(), "--all", "--", "/usr/bin/python3", "-c", program}, o, 60s);
  ASSERT_EQ(o.status, 0) << o;
  std::smatch m;
  const std::regex line(R"(\[(h\d)\s*\] fabric ([0-9.]+) ([0-9.]+) wall ([0-9.]+))");
  int hosts = 0;
  for (std::sregex_iterator i(o.out.begin(), o.out.end(), line), e; i != e; ++i, ++hosts) {
    const double perf = std::stod((*i)[2]), real = std::stod((*i)[3]), w = std::stod((*i)[4]);
    EXPECT_NEAR(perf, 1.0, 0.3) << (*i)[1] << ": " << o.out;
    EXPECT_NEAR(real, 1.0, 0.3) << (*i)[1] << ": " << o.out;
    EXPECT_GT(w, 0.7 * kScale) << (*i)[1] << ": " << o.out;
  }
  EXPECT_EQ(hosts, 2) << o;
  EXPECT_GT(all_wall, 0.7 * kScale);

  // --clock wall: the machine's clock for this command.
  const double plain =
      seconds_of({"exec", lab.name() + ":h1", "--clock", "wall", "--", "sleep", "1"}, o, 60s);
  EXPECT_EQ(o.status, 0) << o;
  EXPECT_LT(plain, 0.5 * kScale) << "sleep 1 on the wall clock took " << plain << " s";
}

TEST_F(HostsTest, AFileOfTheMachinesTmpIsNamedOnPrivateTmpAndSeenOnSharedTmp) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  // The file a user wrote to the machine's /tmp before starting it in every host.
  TempScenario script("print('ran')\n");
  const std::string file = script.path();  // /tmp/fabemu-itest-XXXXXX/scenario.yaml
  ASSERT_EQ(file.rfind("/tmp/", 0), 0u);

  TempScenario priv(two_hosts("tp", ""));
  LabGuard a(lab_name("tp"));
  Outcome up = a.up(priv.path());
  ASSERT_EQ(up.status, 0) << up;
  Outcome o = fabemu({"exec", a.name(), "--all", "--", "/usr/bin/python3", file});
  EXPECT_NE(o.status, 0) << o;
  EXPECT_NE(o.err.find(file + " is in this machine's /tmp, not in h1's"), std::string::npos) << o;
  EXPECT_NE(o.err.find("private /tmp"), std::string::npos) << o;
  EXPECT_NE(o.err.find("FABEMU_SHARED_DIR"), std::string::npos) << o;
  EXPECT_NE(o.err.find("hosts: {tmp: shared}"), std::string::npos) << o;
  // One host as well.
  o = a.exec("h2", {"/usr/bin/python3", file});
  EXPECT_NE(o.status, 0) << o;
  EXPECT_NE(o.err.find("not in h2's"), std::string::npos) << o;
  ASSERT_EQ(a.down().status, 0);

  TempScenario shared(two_hosts("ts", "hosts: {tmp: shared}\n"));
  LabGuard b(lab_name("ts"));
  up = b.up(shared.path());
  ASSERT_EQ(up.status, 0) << up;
  // Each host's output, by host (exec --json).
  auto outputs = [](const Outcome& o) {
    std::map<std::string, std::string> by_host;
    const nlohmann::json j = json_of(o);
    for (const nlohmann::json& h : j["hosts"]) by_host[h["host"]] = h["output"];
    return by_host;
  };
  o = fabemu({"exec", b.name(), "--all", "--json", "--", "/usr/bin/python3", file});
  EXPECT_EQ(o.status, 0) << o;
  EXPECT_EQ(outputs(o), (std::map<std::string, std::string>{{"h1", "ran\n"}, {"h2", "ran\n"}}))
      << o;
  // Each host keeps its own name (UTS namespace): what Open MPI's session directories in a
  // shared /tmp are told apart by.
  o = fabemu({"exec", b.name(), "--all", "--json", "--", "hostname"});
  EXPECT_EQ(outputs(o), (std::map<std::string, std::string>{{"h1", "h1\n"}, {"h2", "h2\n"}})) << o;
}

}  // namespace
}  // namespace fabemu::itest
