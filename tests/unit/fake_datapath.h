// FakeDatapath: a running lab's live side in memory, over the FakeBackend a plan was applied to.
// Refuses what the kernel would (a port that is not there, a second link model on a port,
// freezing a host without a cgroup, removing a rule that is not there) and records every
// change in order, so that `link set/down/up`, `host` and the fault timeline are unit-tested
// without root.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "apply/lab_datapath.h"
#include "fake_backend.h"
#include "shaping/link_cfg.h"

namespace fabemu::unit {

class FakeDatapath : public LabDatapath {
 public:
  FakeDatapath(FakeBackend& fake, const LabPaths& paths, PlanOptions mode)
      : fake_(fake), paths_(paths), mode_(std::move(mode)) {}

  std::vector<std::string> events;  // "set leaf1>spine1", "kill h3", ... in order
  std::set<int> failed;             // links marked failed
  std::map<std::string, bool> frozen;
  std::map<std::string, std::optional<double>> cpu;
  std::map<int, std::set<std::pair<std::string, std::string>>> rules;  // by switch: from, to
  int processes_per_host = 3;

  Result<void> open_link_model() override { return ok(); }
  Result<PlanOptions> link_mode() override { return mode_; }

  Result<fabemu_link_cfg> port_config(uint32_t ifindex) override {
    for (const auto& [name, ns] : fake_.namespaces)
      for (const auto& [ifname, iface] : ns.ifaces)
        if (iface.ifindex == ifindex && iface.shaped) return to_cfg(*iface.shaped);
    return make_error("no link model on ifindex " + std::to_string(ifindex), ENOENT);
  }

  Result<void> set_port(const ShapePort& p) override {
    auto iface = find(p);
    if (!iface) return iface.error();
    if (!(*iface)->shaped) return make_error(p.direction + ": no link model to set", ENOENT);
    (*iface)->shaped = p;
    events.push_back("set " + p.direction);
    return ok();
  }

  Result<void> attach_port(const std::string&, const ShapePort& p) override {
    auto iface = find(p);
    if (!iface) return iface.error();
    if ((*iface)->shaped) return make_error(p.direction + ": already has the link model", EEXIST);
    (*iface)->shaped = p;
    events.push_back("attach " + p.direction);
    return ok();
  }

  Result<void> resize_port_qdisc(const std::string&, const ShapePort& p, bool grow_fq,
                                 bool had_htb) override {
    events.push_back("qdisc " + p.direction +
                     (grow_fq ? " fq grown"
                      : p.htb ? " htb"
                              : " none") +
                     (had_htb ? " (had htb)" : ""));
    return ok();
  }

  Result<std::string> set_failed_links(const std::vector<int>& links, bool fail) override {
    for (int l : links) {
      if (fail)
        failed.insert(l);
      else
        failed.erase(l);
      events.push_back(std::string(fail ? "fail " : "repair ") + std::to_string(l));
    }
    return "rerouted around " + std::to_string(failed.size()) + " failed links";
  }

  Result<int> kill_host_processes(const std::string& host) override {
    events.push_back("kill " + host);
    return processes_per_host;
  }

  Result<void> freeze_host(const std::string& host, bool f) override {
    FABEMU_TRY(need_cgroup(host));
    frozen[host] = f;
    events.push_back(std::string(f ? "freeze " : "thaw ") + host);
    return ok();
  }

  Result<void> set_cpu_quota(const std::string& host, std::optional<double> c) override {
    FABEMU_TRY(need_cgroup(host));
    cpu[host] = c;
    events.push_back("cpu " + host + " " + (c ? std::to_string(*c).substr(0, 4) : "none"));
    return ok();
  }

  Result<void> partition_rules(int sw, const std::vector<std::pair<Prefix, Prefix>>& add,
                               bool cut) override {
    for (const auto& [from, to] : add) {
      const std::pair<std::string, std::string> key{from.str(), to.str()};
      if (cut && !rules[sw].insert(key).second)
        return make_error("rule " + key.first + " -> " + key.second + " exists", EEXIST);
      if (!cut && rules[sw].erase(key) == 0)
        return make_error("no rule " + key.first + " -> " + key.second, ENOENT);
    }
    if (rules[sw].empty()) rules.erase(sw);
    events.push_back(std::string(cut ? "cut " : "heal ") + std::to_string(add.size()) +
                     " rules on " + std::to_string(sw));
    return ok();
  }

 private:
  Result<FakeBackend::Iface*> find(const ShapePort& p) {
    auto n = fake_.namespaces.find(p.ns);
    if (n == fake_.namespaces.end()) return make_error("no namespace " + p.ns, ENOENT);
    auto i = n->second.ifaces.find(p.ifname);
    if (i == n->second.ifaces.end() || i->second.ifindex != p.ifindex)
      return make_error("no port " + p.ifname + " (" + std::to_string(p.ifindex) + ") in " + p.ns,
                        ENODEV);
    return &i->second;
  }

  Result<void> need_cgroup(const std::string& host) {
    if (!fake_.cgroups.count(host_cgroup(paths_, host)))
      return make_error(host + " has no cgroup", ENOENT);
    return ok();
  }

  FakeBackend& fake_;
  const LabPaths& paths_;
  PlanOptions mode_;
};

}  // namespace fabemu::unit
