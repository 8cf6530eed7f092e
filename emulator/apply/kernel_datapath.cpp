// The kernel's LabDatapath: pinned BPF maps, netlink in the nodes' namespaces, cgroups, signals.
#include <linux/netlink.h>
#include <signal.h>

#include <chrono>

#include "apply/cgroup.h"
#include "apply/lab_datapath.h"
#include "apply/link_control.h"
#include "apply/port_shaping.h"
#include "apply/processes.h"
#include "apply/reroute.h"
#include "apply/rtnl.h"
#include "shaping/port_setup.h"
#include "util/netns.h"

namespace fabemu {
namespace {

// Rules of a partition: above the main table's (32766), below local (0).
constexpr uint32_t kPartitionRulePrio = 1000;

class KernelDatapath : public LabDatapath {
 public:
  KernelDatapath(const LabModel& model, const LabPaths& paths, LinkShaper* open)
      : model_(model), paths_(paths), borrowed_(open) {}

  Result<void> open_link_model() override {
    auto maps = shaper();
    if (!maps) return maps.error();
    return ok();
  }

  Result<PlanOptions> link_mode() override { return read_link_mode(paths_); }

  Result<fabemu_link_cfg> port_config(uint32_t ifindex) override {
    auto maps = shaper();
    if (!maps) return maps.error();
    return (*maps)->get(ifindex);
  }

  Result<void> set_port(const ShapePort& port) override {
    auto maps = shaper();
    if (!maps) return maps.error();
    return (*maps)->set(port);
  }

  Result<void> attach_port(const std::string& netns, const ShapePort& port) override {
    auto maps = shaper();
    if (!maps) return maps.error();
    return shape_port_in(**maps, netns, port, /*set_gso=*/true);
  }

  Result<void> resize_port_qdisc(const std::string& netns, const ShapePort& port, bool grow_fq,
                                 bool had_htb) override {
    return run_in_netns(netns, [&]() -> Result<void> {
      auto rtnl = NetlinkSocket::open(NETLINK_ROUTE, std::chrono::seconds(30));
      if (!rtnl) return rtnl.error();
      const int ifindex = static_cast<int>(port.ifindex);
      if (grow_fq) return replace_root_fq(*rtnl, ifindex, *port.fq);
      if (!port.htb) return remove_root_qdisc(*rtnl, ifindex);
      return replace_root_htb(*rtnl, ifindex, *port.htb, had_htb);
    });
  }

  Result<std::string> set_failed_links(const std::vector<int>& links, bool failed) override {
    if (!rerouter_) {
      auto r = Rerouter::open(model_, paths_);
      if (!r) return r.error();
      rerouter_.emplace(std::move(*r));
    }
    return rerouter_->set_failed(links, failed);
  }

  Result<int> kill_host_processes(const std::string& host) override {
    const std::vector<int> pids =
        processes_in_namespaces({paths_.netns_pin(host), paths_.uts_path(host)});
    for (int pid : pids) ::kill(pid, SIGKILL);
    return static_cast<int>(pids.size());
  }

  Result<void> freeze_host(const std::string& host, bool frozen) override {
    return freeze_cgroup(cgroups(), host_cgroup(paths_, host), frozen);
  }

  Result<void> set_cpu_quota(const std::string& host, std::optional<double> cpu) override {
    return fabemu::set_cpu_quota(cgroups(), host_cgroup(paths_, host), cpu);
  }

  Result<void> partition_rules(int sw, const std::vector<std::pair<Prefix, Prefix>>& rules,
                               bool cut) override {
    return run_in_netns(node_netns_path(model_, paths_, sw), [&]() -> Result<void> {
      auto sock = RtnlSocket::open();
      if (!sock) return sock.error();
      for (const auto& [from, to] : rules)
        FABEMU_TRY(sock->blackhole_rule(from, to, kPartitionRulePrio, cut));
      return ok();
    });
  }

 private:
  Result<LinkShaper*> shaper() {
    if (borrowed_) return borrowed_;
    if (!owned_) {
      auto maps = fabemu::open_link_model(paths_);
      if (!maps) return maps.error();
      owned_.emplace(std::move(*maps));
    }
    return &*owned_;
  }

  const CgroupLayout& cgroups() {
    if (!cgroups_) cgroups_ = detect_cgroups();
    return *cgroups_;
  }

  const LabModel& model_;
  const LabPaths& paths_;
  LinkShaper* borrowed_;
  std::optional<LinkShaper> owned_;
  std::optional<Rerouter> rerouter_;
  std::optional<CgroupLayout> cgroups_;
};

}  // namespace

std::unique_ptr<LabDatapath> kernel_datapath(const LabModel& model, const LabPaths& paths,
                                             LinkShaper* open) {
  return std::make_unique<KernelDatapath>(model, paths, open);
}

}  // namespace fabemu
