// Reading the workload (collective benchmarks and user programs) and the fault timeline.
#include "scenario/workload_yaml.h"

#include <optional>
#include <set>
#include <string>

#include "scenario/link_shape_yaml.h"
#include "scenario/loader.h"
#include "util/units.h"

namespace fabemu::detail {
namespace {

// A step's bound: `timeout: 5m`; the runner stops the step there and says so.
std::optional<uint64_t> read_timeout(const Field& f) {
  auto t = f.find("timeout");
  if (!t) return std::nullopt;
  const uint64_t ns = t->parsed(parse_time_ns);
  if (ns < 1'000'000'000ULL) t->fail("a step needs at least 1s; e.g. timeout: 600s");
  return ns;
}

CollectiveStep read_collective(const Field& item) {
  item.check_keys({"collective", "library", "transport", "sizes", "iterations", "timeout"});
  CollectiveStep c;
  // The names stay words: the runner maps them to implementations.
  c.collective = item.at("collective")
                     .one_of({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"});
  c.library = "gloo";
  if (auto f = item.find("library")) c.library = f->one_of({"gloo", "mpi", "ucx"});
  c.transport = "auto";
  if (auto f = item.find("transport")) c.transport = f->one_of({"tcp", "ibverbs", "auto"});
  if (auto f = item.find("sizes")) {
    for (const Field& size : f->items()) {
      c.sizes.push_back(size.parsed(parse_size_bytes));
      if (c.sizes.back() == 0) size.fail("size must be > 0; e.g. 64K, 1M");
    }
    if (c.sizes.empty()) f->fail("empty list; give at least one size, e.g. [64K, 1M]");
  } else {
    c.sizes = {1 << 20};
  }
  if (auto f = item.find("iterations")) c.iterations = f->integer(1, 1'000'000);
  return c;
}

ExecStep read_exec(const Field& item) {
  item.check_keys({"exec"});
  Field exec = item.at("exec");
  exec.check_keys({"hosts", "command", "timeout"});
  ExecStep e;
  if (auto hosts = exec.find("hosts")) {
    if (hosts->is_scalar()) {
      if (hosts->str() != "all") {
        hosts->fail("unknown value '" + hosts->str() + "'; valid: all, or a list like [h1, h2]");
      }
    } else {
      std::set<std::string> seen;
      e.hosts.clear();
      for (const Field& h : hosts->items()) {
        std::string name = h.str();
        if (!is_valid_node_name(name)) h.fail("'" + name + "' is not a host name, e.g. h1");
        if (!seen.insert(name).second) h.fail("host '" + name + "' is listed twice");
        e.hosts += (e.hosts.empty() ? "" : ",") + name;
      }
      if (e.hosts.empty()) hosts->fail("empty list; valid: all, or a list like [h1, h2]");
    }
  }
  Field command = exec.at("command");
  // An argv list, never a shell string: what runs is exactly what the file says.
  if (!command.is_sequence()) {
    command.fail(
        "expected a list of program and arguments, e.g. [\"python3\", \"train.py\"]; "
        "for a shell, write [\"sh\", \"-c\", \"...\"]");
  }
  for (const Field& arg : command.items()) e.command.push_back(arg.str());
  if (e.command.empty())
    command.fail("empty command; give a program, e.g. [\"python3\", \"train.py\"]");
  if (e.command[0].empty()) command.items()[0].fail("empty program name");
  return e;
}

FaultEvent read_fault(const Field& item, uint32_t mtu) {
  item.check_keys({"at", "link", "set", "down", "up"});
  FaultEvent ev;
  ev.at_ns = item.at("at").parsed(parse_time_ns);
  ev.link = read_link_name(item.at("link"));
  ev.loc = item.loc();
  int actions = item.has("set") + item.has("down") + item.has("up");
  if (actions != 1) {
    item.fail("a fault does exactly one thing; give one of set: {...}, down: true, up: true");
  }
  if (auto set = item.find("set")) {
    ev.set = read_link_shape_only(*set, mtu);
    if (ev.set->empty()) set->fail("sets nothing; give link-shape keys, e.g. {loss: 2%}");
  }
  if (auto down = item.find("down")) {
    ev.down = down->boolean();
    if (!ev.down) down->fail("false does nothing; to bring a link back write up: true");
  }
  if (auto up = item.find("up")) {
    ev.up = up->boolean();
    if (!ev.up) up->fail("false does nothing; to take a link down write down: true");
  }
  return ev;
}

}  // namespace

std::vector<WorkloadStep> read_workload(const Field& list) {
  std::vector<WorkloadStep> steps;
  for (const Field& item : list.items()) {
    bool collective = item.has("collective"), exec = item.has("exec");
    if (collective == exec) {
      item.fail(std::string(collective ? "both 'collective' and 'exec'"
                                       : "neither 'collective' nor 'exec'") +
                "; a workload step is either {collective: allreduce, ...} or "
                "{exec: {hosts: all, command: [...]}}");
    }
    WorkloadStep step;
    step.loc = item.loc();
    if (collective) {
      step.step = read_collective(item);
      step.timeout_ns = read_timeout(item);
    } else {
      step.step = read_exec(item);
      step.timeout_ns = read_timeout(item.at("exec"));
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

std::vector<FaultEvent> read_faults(const Field& list, uint32_t mtu) {
  std::vector<FaultEvent> events;
  for (const Field& item : list.items()) events.push_back(read_fault(item, mtu));
  return events;
}

}  // namespace fabemu::detail
