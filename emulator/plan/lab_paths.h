// Where a lab's objects live on the system: namespace names, run directory, files, cgroups.
#pragma once

#include <string>

namespace fabemu {

// Where the link model's maps are pinned: <root>/fabemu/<lab> (see lab_pin_dir).
inline constexpr char kBpffsRoot[] = "/sys/fs/bpf";

// Every object fabemu makes carries this prefix, so `down --all` and users can tell ours.
inline constexpr const char* kPrefix = "fabemu";

// <root>/fabemu/<lab>: the maps of one lab, shared by every fabemu process working on it.
inline std::string lab_pin_dir(const std::string& lab, const std::string& bpffs_root = kBpffsRoot) {
  return bpffs_root + "/" + kPrefix + "/" + lab;
}

struct LabPaths {
  std::string lab;
  // Each lab's run dir under here is a tmpfs of its own: journal, namespace pins, /etc
  // overlay and per-host /tmp, all gone in one unmount.
  std::string run_root = "/run/fabemu";
  std::string netns_dir = "/run/netns";      // where `ip netns` looks
  std::string etc_netns_dir = "/etc/netns";  // what `ip netns exec` bind-mounts over /etc
  std::string bpffs_root = kBpffsRoot;       // the link model's maps: <root>/fabemu/<lab>

  std::string run_dir() const { return run_root + "/" + lab; }
  std::string journal() const { return run_dir() + "/journal"; }
  std::string scenario_copy() const { return run_dir() + "/scenario.yaml"; }
  std::string shaping_file() const { return run_dir() + "/shaping"; }
  std::string rdma_file() const { return run_dir() + "/rdma"; }              // rxe or off <why>
  std::string time_scale_file() const { return run_dir() + "/time-scale"; }  // FACTOR <why>
  // Links whose routes were moved off them (`link down`, the fault timeline): one name a line.
  std::string failed_links_file() const { return run_dir() + "/failed-links"; }
  // The workload step `run` is playing now, while it plays (`top` shows it).
  std::string step_file() const { return run_dir() + "/step"; }
  // With a lab across machines: which part this machine builds (JSON).
  std::string part_file() const { return run_dir() + "/part"; }
  // Whether rxe carries traffic between namespaces on this kernel, probed once per boot.
  std::string rxe_probe_cache() const { return run_root + "/rxe-probe"; }
  std::string ns_name(const std::string& node) const {
    return std::string(kPrefix) + "-" + lab + "-" + node;
  }
  // The namespace is pinned inside the run dir; /run/netns/NAME links to the pin, so `ip netns`
  // sees it.
  std::string netns_pin(const std::string& node) const { return run_dir() + "/ns/" + node; }
  std::string netns_path(const std::string& node) const { return netns_dir + "/" + ns_name(node); }
  std::string uts_dir() const { return run_dir() + "/uts"; }
  std::string uts_path(const std::string& node) const { return uts_dir() + "/" + node; }
  // One /etc overlay (hosts) for the whole lab; /etc/netns/NS links to it for `ip netns exec`.
  std::string etc_dir() const { return run_dir() + "/etc"; }
  std::string etc_link(const std::string& node) const {
    return etc_netns_dir + "/" + ns_name(node);
  }
  std::string pin_dir() const { return lab_pin_dir(lab, bpffs_root); }
  std::string tmp_dir() const { return run_dir() + "/tmp"; }
  std::string host_tmp(const std::string& node) const { return tmp_dir() + "/" + node; }
  // Shared by every host of the lab (the hosts' own /tmp is private): rendezvous files of
  // collectives, workload outputs.
  std::string shared_dir() const { return run_dir() + "/shared"; }
  // With Open vSwitch switches: the daemons' database, sockets, logs and each bridge's flows.
  std::string ovs_dir() const { return run_dir() + "/ovs"; }
  std::string ovs_file() const { return run_dir() + "/ovs-datapath"; }  // kernel or userspace
  // With routing: bgp: each router's FRR configuration (seen as /etc/frr inside the node) and
  // its daemons' sockets, pid files and logs (seen as /run/frr).
  std::string frr_etc(const std::string& node) const { return run_dir() + "/frr/" + node + "/etc"; }
  std::string frr_run(const std::string& node) const { return run_dir() + "/frr/" + node + "/run"; }
  // RDMA device names are global (not per namespace): named like the host's namespace, the lab
  // and host in the name keep them apart and tell users whose they are.
  std::string rxe_name(const std::string& host) const { return ns_name(host); }
};

}  // namespace fabemu
