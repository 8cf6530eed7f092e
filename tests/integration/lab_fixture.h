// Integration-test helpers: child processes (through util/process), lab guards, snapshots.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "util/mountinfo.h"
#include "util/process.h"

namespace fabemu::itest {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Argv = std::vector<std::string>;

inline const std::string kFabemu = FABEMU_BINARY;
inline const std::string kSourceDir = FABEMU_SOURCE_DIR;

// ---------------------------------------------------------------------------------------------
// Child processes: argv vectors, no shell, every wait bounded.

struct Outcome {
  int status = -1;  // exit status; 128+N when killed by signal N; -1 when it ran out of time
  std::string out, err;
};

inline std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  return os << "exit " << o.status << "\n--- stdout\n" << o.out << "--- stderr\n" << o.err;
}

// Starts argv (a path, or a name found on PATH) in a process group of its own, stdin from
// /dev/null, stdout and stderr onto the given fds (-1: /dev/null). The Process kills and reaps
// it when it goes, unless the test waited for it.
inline Process spawn(const Argv& args, int out_fd = -1, int err_fd = -1) {
  ProcessSpec spec;
  spec.argv = args;
  spec.own_group = true;
  spec.out = out_fd >= 0 ? Stdio::Fd : Stdio::Null;
  spec.err = err_fd >= 0 ? Stdio::Fd : Stdio::Null;
  spec.out_fd = out_fd;
  spec.err_fd = err_fd;
  auto p = Process::start(spec);
  if (!p) throw std::runtime_error("starting " + args.front() + ": " + p.error().what());
  return std::move(*p);
}

// Its exit status within `timeout`, else nullopt (it goes on running).
inline std::optional<int> wait_for(Process& p, std::chrono::milliseconds timeout) {
  return p.wait_until(Clock::now() + timeout);
}

// Runs argv to completion and captures its output; after `timeout` the process group is killed.
inline Outcome run(const Argv& args, std::chrono::milliseconds timeout = 30s) {
  CommandOptions options;
  options.timeout = timeout;
  auto r = run_captured(args, options);
  if (!r) return Outcome{-1, "", r.error().what()};
  return Outcome{r->status, std::move(r->out), std::move(r->err)};
}

// Runs every command, at most `width` at a time; results in the order of `commands`.
inline std::vector<Outcome> run_all(const std::vector<Argv>& commands, int width,
                                    std::chrono::milliseconds timeout = 30s) {
  std::vector<Outcome> results(commands.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < width; ++w)
    workers.emplace_back([&] {
      for (size_t i; (i = next++) < commands.size();) results[i] = run(commands[i], timeout);
    });
  for (auto& t : workers) t.join();
  return results;
}

inline Argv fabemu_argv(Argv args) {
  args.insert(args.begin(), kFabemu);
  return args;
}

inline Outcome fabemu(const Argv& args, std::chrono::milliseconds timeout = 60s) {
  return run(fabemu_argv(args), timeout);
}

inline std::optional<std::string> find_tool(const std::string& name) {
  auto path = find_program(name);
  return path ? std::optional(*path) : std::nullopt;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// ---------------------------------------------------------------------------------------------
// Labs.

// "t" + part of our pid + suffix: unique among concurrent test runs, at most 12 characters.
// Suffixes hold no '-', so no lab's namespace prefix is a prefix of another's.
inline std::string lab_name(const std::string& suffix) {
  return "t" + std::to_string(::getpid() % 10000) + suffix;
}

inline std::string run_dir(const std::string& lab) {
  return "/run/fabemu/" + lab;
}
inline std::string netns_path(const std::string& lab, const std::string& node) {
  return "/run/netns/fabemu-" + lab + "-" + node;
}

// Owns a lab name: whatever happens in the test, the destructor takes the lab down.
class LabGuard {
 public:
  explicit LabGuard(std::string name) : name_(std::move(name)) {}
  LabGuard(const LabGuard&) = delete;
  LabGuard& operator=(const LabGuard&) = delete;
  ~LabGuard() {
    if (std::filesystem::exists(run_dir(name_))) {
      Outcome o = fabemu({"down", name_}, 90s);  // beyond down's own 60 s wait for the kernel
      if (o.status != 0) ADD_FAILURE() << "cleaning up lab " << name_ << ": " << o;
    }
  }

  const std::string& name() const { return name_; }
  // --accept-degraded: the scenarios add microseconds of delay, which a kernel without fq
  // cannot; the tests that are about the link model say which mode they need.
  Outcome up(const std::string& scenario) const {
    return fabemu({"up", scenario, "--lab", name_, "--accept-degraded"});
  }
  // The same, its result as JSON on stdout (docs/schema/up.schema.json).
  Outcome up_json(const std::string& scenario) const {
    return fabemu({"up", scenario, "--lab", name_, "--accept-degraded", "--json"});
  }
  Outcome down() const { return fabemu({"down", name_}, 90s); }
  Outcome exec(const std::string& node, const Argv& command) const {
    Argv args = {"exec", name_ + ":" + node, "--"};
    args.insert(args.end(), command.begin(), command.end());
    return fabemu(args, 30s);
  }

 private:
  std::string name_;
};

// A directory of its own under /tmp (/tmp/PREFIX-XXXXXX) that goes away with the object.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    if (::mkdtemp(tmpl.data())) path_ = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A scenario file in a directory of its own that goes away with the object.
class TempScenario {
 public:
  explicit TempScenario(const std::string& text) : path_(dir_.path() + "/scenario.yaml") {
    std::ofstream(path_) << text;
  }
  const std::string& path() const { return path_; }

 private:
  TempDir dir_{"fabemu-itest"};
  std::string path_;
};

// ---------------------------------------------------------------------------------------------
// `status --json`: the nodes array holds flat objects, so a small scanner is enough.

struct StatusNode {
  std::map<std::string, std::string> fields;  // string-valued fields: name, role, address, ...
  std::string operator[](const std::string& key) const {
    auto it = fields.find(key);
    return it == fields.end() ? "" : it->second;
  }
};

inline std::string json_string_field(const std::string& json, const std::string& key) {
  std::smatch m;
  std::regex re("\"" + key + "\":\"([^\"]*)\"");
  return std::regex_search(json, m, re) ? m[1].str() : "";
}

inline std::vector<StatusNode> status_nodes(const std::string& json) {
  std::vector<StatusNode> nodes;
  auto begin = json.find("\"nodes\":[");
  if (begin == std::string::npos) return nodes;
  auto end = json.find(']', begin);
  std::string array = json.substr(begin, end - begin);
  static const std::regex object(R"(\{[^{}]*\})"), field(R"re("([a-z_]+)":"([^"]*)")re");
  for (std::sregex_iterator o(array.begin(), array.end(), object), oe; o != oe; ++o) {
    StatusNode n;
    std::string text = o->str();
    for (std::sregex_iterator f(text.begin(), text.end(), field), fe; f != fe; ++f)
      n.fields[(*f)[1].str()] = (*f)[2].str();
    nodes.push_back(std::move(n));
  }
  return nodes;
}

// Host name -> address, in the order `status` lists them.
inline std::vector<std::pair<std::string, std::string>> host_addresses(const std::string& json) {
  std::vector<std::pair<std::string, std::string>> hosts;
  for (const StatusNode& n : status_nodes(json))
    if (n["role"] == "host") hosts.emplace_back(n["name"], n["address"]);
  return hosts;
}

// ---------------------------------------------------------------------------------------------
// What a lab leaves on the system, seen from outside fabemu.

// Interfaces of the root network namespace that fabemu could have made or touched: named like
// its ports (a peer node's name, ethN) or carrying its prefix. Other tools sharing the machine
// (the benchmark runs Mininet, whose s3-eth2 come and go) say nothing about a lab.
inline std::set<std::string> root_interfaces() {
  static const std::regex ours(
      R"(^((h|leaf|spine|edge|agg|core|sw)\d+|n\d+-(g\d+|su)|eth\d+|fabemu.*)$)");
  std::set<std::string> names;
  if (struct if_nameindex* list = ::if_nameindex()) {
    for (struct if_nameindex* i = list; i->if_index != 0; ++i)
      if (std::regex_match(i->if_name, ours)) names.insert(i->if_name);
    ::if_freenameindex(list);
  }
  return names;
}

inline std::string host_name() {
  utsname u{};
  ::uname(&u);
  return u.nodename;
}

// Mount points of cgroup hierarchies: v1 ones by controller ("cpu", "memory", ...), v2 as "2".
inline std::map<std::string, std::string> cgroup_mounts() {
  std::map<std::string, std::string> out;
  for (const MountInfo& m : read_mountinfo()) {
    if (m.fstype == "cgroup2") out.emplace("2", m.mount_point);
    if (m.fstype != "cgroup") continue;
    for (const std::string& o : split_list(m.super_options, ',')) out.emplace(o, m.mount_point);
  }
  return out;
}

struct Snapshot {
  // Paths that name the lab: namespaces, /etc/netns links, run dir, cgroups, mount points.
  std::set<std::string> lab_objects;
  std::set<std::string> interfaces;  // root_interfaces()
  std::string hostname;

  bool operator==(const Snapshot&) const = default;

  static Snapshot take(const std::string& lab) {
    namespace fs = std::filesystem;
    Snapshot s;
    const std::string prefix = "fabemu-" + lab + "-";
    std::error_code ec;
    for (const char* dir : {"/run/netns", "/etc/netns"})
      for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().filename().string().starts_with(prefix)) s.lab_objects.insert(e.path());
    if (fs::exists(run_dir(lab), ec)) s.lab_objects.insert(run_dir(lab));
    auto cgroup = [&](const fs::path& root) {
      if (fs::exists(root / "fabemu" / lab, ec)) s.lab_objects.insert(root / "fabemu" / lab);
    };
    if (fs::exists("/sys/fs/bpf/fabemu/" + lab, ec))
      s.lab_objects.insert("/sys/fs/bpf/fabemu/" + lab);  // the link model's pinned maps
    // Soft-RoCE devices: their names are global, not inside any namespace.
    for (const auto& e : fs::directory_iterator("/sys/class/infiniband", ec))
      if (e.path().filename().string().starts_with(prefix))
        s.lab_objects.insert("rdma " + e.path().filename().string());
    cgroup("/sys/fs/cgroup");
    for (const auto& e : fs::directory_iterator("/sys/fs/cgroup", ec)) cgroup(e.path());
    for (const MountInfo& m : read_mountinfo()) {
      const std::string& mnt = m.mount_point;
      if (mnt.find("/" + prefix) != std::string::npos || mnt == run_dir(lab) ||
          mnt.starts_with(run_dir(lab) + "/"))
        s.lab_objects.insert("mount " + mnt);
    }
    s.interfaces = root_interfaces();
    s.hostname = host_name();
    return s;
  }
};

inline void PrintTo(const Snapshot& s, std::ostream* os) {
  *os << "{hostname " << s.hostname << "; " << s.interfaces.size() << " root interfaces:";
  for (const auto& i : s.interfaces) *os << " " << i;
  *os << "; lab objects:";
  for (const auto& o : s.lab_objects) *os << " " << o;
  *os << "}";
}

// ---------------------------------------------------------------------------------------------
// Processes inside a lab, found by the namespaces their main thread is in.

using NsId = std::pair<dev_t, ino_t>;

inline std::optional<NsId> ns_id(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return NsId{st.st_dev, st.st_ino};
}

// The network namespaces of every node and the UTS namespaces of every host of `lab`.
inline std::set<NsId> lab_namespaces(const std::string& lab) {
  namespace fs = std::filesystem;
  std::set<NsId> ids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/run/netns", ec))
    if (e.path().filename().string().starts_with("fabemu-" + lab + "-"))
      if (auto id = ns_id(e.path())) ids.insert(*id);
  for (const auto& e : fs::directory_iterator(run_dir(lab) + "/uts", ec))
    if (auto id = ns_id(e.path())) ids.insert(*id);
  return ids;
}

inline std::set<pid_t> processes_in(const std::set<NsId>& namespaces) {
  namespace fs = std::filesystem;
  std::set<pid_t> pids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    for (const char* kind : {"net", "uts"}) {
      auto id = ns_id("/proc/" + name + "/ns/" + kind);
      if (id && namespaces.count(*id)) pids.insert(std::stoi(name));
    }
  }
  return pids;
}

// ---------------------------------------------------------------------------------------------

// Base fixture: integration tests need root and the tools the tests drive.
class LabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "building labs needs root (namespaces, veths, routes)";
    for (const char* tool : {"ping", "ip"})
      if (!find_tool(tool)) GTEST_SKIP() << tool << " is not installed (iputils-ping, iproute2)";
  }
};

// Received bit/s of an iperf3 run from `from` to `to` (a server is started and ends after one
// test). `udp_rate` empty: TCP.
// `sent_s`: where the sender's own time goes, when asked.
inline double iperf_bps(const LabGuard& lab, const std::string& from, const std::string& to,
                        const std::string& udp_rate, int seconds = 2, double* sent_s = nullptr) {
  Process server = spawn({kFabemu, "exec", lab.name() + ":" + to, "--", *find_tool("iperf3"), "-s",
                          "-1", "-p", "5299"});
  std::this_thread::sleep_for(300ms);
  Argv client = {*find_tool("iperf3"), "-c", to, "-p", "5299", "-t", std::to_string(seconds), "-J"};
  if (!udp_rate.empty()) client.insert(client.end(), {"-u", "-b", udp_rate, "-l", "1400"});
  Outcome o = lab.exec(from, client);
  server.stop(0ms);
  EXPECT_EQ(o.status, 0) << o;
  // Bytes the receiver got over the sender's time: the receiver's own clock runs until the
  // end-of-test message arrives on iperf3's TCP control connection, which a policed link may
  // drop and retransmit 200 ms later.
  std::smatch got, sent;
  const std::regex bytes_re(R"re("sum_received":\s*\{[^}]*"bytes":\s*([0-9]+))re");
  const std::regex secs_re(R"re("sum_sent":\s*\{[^}]*"seconds":\s*([0-9.e+]+))re");
  if (!std::regex_search(o.out, got, bytes_re) || !std::regex_search(o.out, sent, secs_re)) {
    ADD_FAILURE() << "no received bytes or sending time in iperf3's output: " << o;
    return 0;
  }
  if (sent_s) *sent_s = std::stod(sent[1]);
  return std::stod(got[1]) * 8 / std::stod(sent[1]);
}

// ---------------------------------------------------------------------------------------------
// A run's results as its report's records (report.jsonl; docs/schema/run.schema.json), not its
// wording.

// The records of one type ("step", "result", "flow", "fault", "expect", ...) in order.
inline std::vector<nlohmann::json> report_records(const std::string& report_dir,
                                                  const std::string& type) {
  std::vector<nlohmann::json> out;
  std::ifstream lines(report_dir + "/report.jsonl");
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("type", "") == type) out.push_back(std::move(j));
  }
  return out;
}

// A command's `--json` object (docs/json.md) from its stdout; a discarded value when there is
// none (a refusal prints nothing there).
inline nlohmann::json json_of(const Outcome& o) {
  return nlohmann::json::parse(o.out, nullptr, false);
}

// A run's report.jsonl as `run --json` holds it: {"records": [...]}, telemetry samples included.
inline nlohmann::json report_json(const std::string& report_dir) {
  nlohmann::json records = nlohmann::json::array();
  std::ifstream lines(report_dir + "/report.jsonl");
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) records.push_back(std::move(j));
  }
  return {{"records", records}};
}

// The records of one type of `run --json` (or report_json), in order.
inline std::vector<nlohmann::json> records_of(const nlohmann::json& run, const std::string& type) {
  std::vector<nlohmann::json> out;
  if (!run.is_object() || !run.contains("records")) return out;
  for (const nlohmann::json& j : run["records"])
    if (j.is_object() && j.value("type", "") == type) out.push_back(j);
  return out;
}

// The fault timeline's step named `what` ("leaf1:spine1 down (flap 1/6)"); null when the run
// has none.
inline nlohmann::json fault_record(const nlohmann::json& run, const std::string& what) {
  for (const nlohmann::json& f : records_of(run, "fault"))
    if (f.value("what", "") == what) return f;
  return nullptr;
}

// The expectation whose `what` starts with `rule` ("max_drops 0"); null when there is none.
inline nlohmann::json expect_record(const nlohmann::json& run, const std::string& rule) {
  for (const nlohmann::json& e : records_of(run, "expect"))
    if (e.value("what", "").starts_with(rule)) return e;
  return nullptr;
}

// The results (one per size) of collective step `index`.
inline std::vector<nlohmann::json> step_results(const nlohmann::json& run, int index) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& r : records_of(run, "result"))
    if (r.value("step", -1) == index) out.push_back(r);
  return out;
}

// Step `index` passed, and (a collective) every size it ran came out right; at least
// `min_sizes` sizes ran (a collective's verdict is about its results only when it has some).
inline ::testing::AssertionResult step_ok_and_correct(const nlohmann::json& run, int index,
                                                      size_t min_sizes = 0) {
  bool found = false;
  for (const nlohmann::json& s : records_of(run, "step"))
    if (s.value("index", -1) == index) {
      found = true;
      if (!s.value("ok", false))
        return ::testing::AssertionFailure()
               << "step " << index << " failed: " << s.value("failure", std::string());
    }
  if (!found) return ::testing::AssertionFailure() << "no step " << index << " in the report";
  const std::vector<nlohmann::json> results = step_results(run, index);
  if (results.size() < min_sizes)
    return ::testing::AssertionFailure()
           << "step " << index << ": " << results.size() << " sizes, expected " << min_sizes;
  for (const nlohmann::json& r : results)
    if (r.value("wrong", 1) != 0)
      return ::testing::AssertionFailure() << "step " << index << ": " << r.value("wrong", 1)
                                           << " wrong values at size " << r.value("size", 0);
  return ::testing::AssertionSuccess() << results.size() << " sizes right";
}

inline ::testing::AssertionResult step_ok_and_correct(const std::string& report_dir, int index,
                                                      size_t min_sizes = 0) {
  return step_ok_and_correct(report_json(report_dir), index, min_sizes);
}

// How each direction's counters grew over the run, from the first telemetry sample to the last
// (a counter that went back counts 0), by direction name ("spine1>leaf1"): what the run's link
// tables (busiest, dropping, PFC pauses) are drawn from.
inline std::map<std::string, nlohmann::json> counter_growth(const nlohmann::json& run) {
  std::map<std::string, nlohmann::json> out;
  const std::vector<nlohmann::json> samples = records_of(run, "sample");
  if (samples.size() < 2) return out;
  std::map<std::string, nlohmann::json> first;
  for (const nlohmann::json& d : samples.front()["directions"]) first[d["name"]] = d;
  for (const nlohmann::json& d : samples.back()["directions"]) {
    nlohmann::json g = nlohmann::json::object();
    const nlohmann::json& f = first[d["name"]];
    for (const auto& [key, value] : d.items())
      if (value.is_number_unsigned()) {
        const uint64_t from = f.is_object() ? f.value(key, uint64_t{0}) : 0;
        g[key] = value.get<uint64_t>() >= from ? value.get<uint64_t>() - from : 0;
      }
    out[d["name"]] = g;
  }
  return out;
}

}  // namespace fabemu::itest
