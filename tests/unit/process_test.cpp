// util/process: deadlines that hold to the end, exit statuses, stdio, groups, server/client.
#include "util/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "util/files.h"

namespace fabemu {
namespace {

using namespace std::chrono_literals;

// Live (not zombie) processes of process group `group`, from /proc/*/stat.
int live_members(pid_t group) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const size_t paren = text.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(text.substr(paren + 2));
    std::string state;
    long ppid = 0, pgrp = 0;
    fields >> state >> ppid >> pgrp;
    if (pgrp == group && state != "Z") ++n;
  }
  return n;
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = ProcessClock::now();
  f();
  return std::chrono::duration<double>(ProcessClock::now() - t0).count();
}

TEST(FindProgram, LooksUpPathThenSbinAndKeepsPaths) {
  auto sh = find_program("sh");
  ASSERT_TRUE(sh) << sh.error().what();
  EXPECT_EQ(sh->front(), '/');
  EXPECT_EQ(*find_program("./relative/tool"), "./relative/tool");
  auto none = find_program("fabemu-no-such-program");
  ASSERT_FALSE(none);
  EXPECT_EQ(errno_of(none.error()), ENOENT);
  EXPECT_NE(none.error().message.find("fabemu-no-such-program"), std::string::npos);
}

TEST(RunCaptured, CollectsBothOutputsAndTheStatus) {
  auto r = run_captured({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r) << r.error().what();
  EXPECT_EQ(r->status, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_FALSE(r->timed_out);
}

TEST(RunCaptured, EnvironmentIsAddedAndReplaced) {
  CommandOptions o;
  o.env = {{"FABEMU_TEST_A", "1"}, {"HOME", "/nowhere"}};
  auto r = run_captured({"sh", "-c", "echo $FABEMU_TEST_A $HOME"}, o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out, "1 /nowhere\n");
}

TEST(RunCaptured, SignalDeathIs128PlusTheSignal) {
  auto r = run_captured({"sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 128 + SIGKILL);
}

// The bug this module fixed: once a program closed both outputs, the deadline no longer held.
TEST(RunCaptured, DeadlineHoldsAfterTheProgramClosesItsOutput) {
  CommandOptions o;
  o.timeout = 300ms;
  Result<CommandOutcome> r = make_error("not run");
  const double s = seconds_of([&] {
    r = run_captured({"sh", "-c", "exec >/dev/null 2>&1; sleep 30"}, o);
  });
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->status, -1);
  EXPECT_LT(s, 5.0);
}

TEST(RunCaptured, DeadlineHoldsWhileItTalks) {
  CommandOptions o;
  o.timeout = 300ms;
  Result<CommandOutcome> r = make_error("not run");
  const double s = seconds_of([&] {
    r = run_captured({"sh", "-c", "while :; do echo x; sleep 0.01; done"}, o);
  });
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(s, 5.0);
}

// A program that leaves a child behind holding its output (a daemon that forgot to close it)
// is done when it exits, not when the child lets go.
TEST(RunCaptured, AProgramThatLeavesAChildHoldingItsOutputIsDoneWhenItExits) {
  CommandOptions o;
  o.timeout = 20s;
  Result<CommandOutcome> r = make_error("not run");
  const double s = seconds_of([&] { r = run_captured({"sh", "-c", "echo hi; sleep 30 &"}, o); });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 0);
  EXPECT_EQ(r->out, "hi\n");
  EXPECT_LT(s, 5.0);
}

TEST(RunCommand, FailureNamesTheProgramStatusAndWhatItSaid) {
  auto r = run_command({"sh", "-c", "echo broken pipe dream >&2; exit 4"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("exit status 4"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("broken pipe dream"), std::string::npos);
  // A program that cannot be run is start()'s error with exec's errno, not an exit status.
  auto missing = run_command({"fabemu-no-such-program"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(errno_of(missing.error()), ENOENT) << missing.error().what();
  EXPECT_NE(missing.error().what().find("running fabemu-no-such-program"), std::string::npos);
}

TEST(Process, AProgramsOwnExit127IsItsStatusNotAFailureToStart) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "exit 127"};
  auto p = Process::start(spec);
  ASSERT_TRUE(p) << p.error().what();
  EXPECT_EQ(p->wait(), 127);
  // A file without execute permission.
  const std::string plain =
      ::testing::TempDir() + "/fabemu-not-executable-" + std::to_string(::getpid());
  ASSERT_TRUE(write_file(plain, "#!/bin/sh\n"));
  ::chmod(plain.c_str(), 0644);
  spec.argv = {plain};
  auto denied = Process::start(spec);
  ASSERT_FALSE(denied);
  EXPECT_EQ(errno_of(denied.error()), EACCES) << denied.error().what();
  EXPECT_EQ(denied.error().what(), "running " + plain + ": Permission denied");
  ::unlink(plain.c_str());
}

TEST(Process, BeforeExecRunsInTheChildAndItsErrorIsStarts) {
  ProcessSpec spec;
  spec.argv = {"true"};
  spec.out = spec.err = Stdio::Pipe;
  spec.before_exec = [] { return Result<void>(make_error("cannot enter the node", ENOENT)); };
  auto p = Process::start(spec);
  ASSERT_FALSE(p);
  EXPECT_EQ(errno_of(p.error()), ENOENT);
  EXPECT_NE(p.error().what().find("cannot enter the node"), std::string::npos) << p.error().what();
}

TEST(Process, StopEndsTheWholeGroupAndWaitUntilReturnsAtTheDeadline) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "trap '' TERM; sleep 30 & sleep 30"};
  spec.own_group = true;
  auto p = Process::start(spec);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->wait_until(ProcessClock::now() + 100ms));
  const pid_t group = p->pid();
  int status = 0;
  const double s = seconds_of([&] { status = p->stop(200ms); });
  EXPECT_EQ(status, 128 + SIGKILL);  // it ignored SIGTERM
  EXPECT_LT(s, 5.0);
  // Nothing of the group runs on (the background sleep included; its zombie is init's).
  for (int i = 0; i < 100 && live_members(group) > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(live_members(group), 0);
}

TEST(Process, DestructorKillsAndReapsARunningChild) {
  pid_t pid = -1;
  {
    ProcessSpec spec;
    spec.argv = {"sleep", "30"};
    auto p = Process::start(spec);
    ASSERT_TRUE(p);
    pid = p->pid();
  }
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: no zombie keeps the pid
}

TEST(ServerClient, ClientRunsOnceTheServerIsReadyAndBothAreReaped) {
  char dir[] = "/tmp/fabemu-process-test-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  const std::string flag = std::string(dir) + "/ready";
  ServerClientSpec spec;
  spec.server.argv = {"sh", "-c", "sleep 0.2; touch " + flag + "; sleep 0.2"};
  spec.client.argv = {"test", "-e", flag};
  spec.ready = [&](pid_t) { return ::access(flag.c_str(), F_OK) == 0; };
  spec.deadline = ProcessClock::now() + 20s;
  auto r = run_server_client(spec);
  ASSERT_TRUE(r) << r.error().what();
  EXPECT_TRUE(r->ready);
  EXPECT_EQ(r->client, std::optional<int>(0));
  EXPECT_EQ(r->server, std::optional<int>(0));
  ::unlink(flag.c_str());
  ::rmdir(dir);
}

TEST(ServerClient, AServerThatDiesFirstOrNeverListensIsReported) {
  ServerClientSpec spec;
  spec.server.argv = {"sh", "-c", "exit 5"};
  spec.client.argv = {"true"};
  spec.ready = [](pid_t) { return false; };
  spec.deadline = ProcessClock::now() + 20s;
  auto r = run_server_client(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->server_early_exit, std::optional<int>(5));
  EXPECT_FALSE(r->client);

  spec.server.argv = {"sleep", "30"};
  spec.deadline = ProcessClock::now() + 200ms;
  r = run_server_client(spec);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ready);
  EXPECT_FALSE(r->server_early_exit);
}

}  // namespace
}  // namespace fabemu
