// Plan: the ordered list of kernel and file-system actions that brings a lab up.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "model/addressing.h"
#include "model/routing.h"
#include "model/topology.h"
#include "plan/lab_paths.h"
#include "scenario/scenario.h"

namespace fabemu {

// A network namespace pinned at `pin` (named for `ip netns` by a MakeSymlink at
// /run/netns/NAME); hosts also get a UTS namespace whose hostname is the node name, pinned at
// uts_path.
struct CreateNamespace {
  std::string ns;        // namespace name
  std::string pin;       // bind mount inside the lab's run dir
  std::string uts_path;  // empty for switches
  std::string hostname;
};

struct SetSysctl {
  std::string ns;
  std::string key;  // "net/ipv4/ip_forward" (path under /proc/sys)
  std::string value;
  bool optional = false;  // absent on some kernels (IPv6 compiled out): skip quietly
};

struct SetLinkUp {
  std::string ns;
  std::string ifname;
};

// A veth pair created with each end directly in its namespace, with the fabric MTU. End a
// comes up with it; end b is brought up by a SetLinkUp in its namespace (the kernel cannot
// open a veth whose peer is not joined yet).
struct CreateVeth {
  std::string ns_a, if_a, ns_b, if_b;
  uint32_t mtu = 1500;
};

struct AddAddress {
  std::string ns, ifname;
  Prefix addr;  // address with its prefix length
};

struct AddRoute {
  std::string ns;
  Prefix dst;
  struct Hop {
    Ipv4 gateway;
    std::string ifname;
  };
  std::vector<Hop> hops;
  std::optional<Ipv4> src;  // preferred source address
};

struct WriteFile {
  std::string path;
  std::string content;
};

struct MakeDir {
  std::string path;
};

// Symlinks may be made in the background (finish() waits for them): nothing in the plan
// depends on them, and on a disk-backed /run or /etc each costs a journal write.
struct MakeSymlink {
  std::string target;  // what the link points to
  std::string path;
};

// A cgroup per limited host, `fabemu/LAB/NODE` under each controller's hierarchy.
struct CreateCgroup {
  std::string path;  // relative to the controller's mount point
  HostLimits limits;
};

using Action = std::variant<CreateNamespace, SetSysctl, SetLinkUp, CreateVeth, AddAddress, AddRoute,
                            WriteFile, MakeDir, MakeSymlink, CreateCgroup>;

std::string describe(const Action& a);  // one line, for errors and `--dry-run`

// What a lab leaves on the system, in creation order; `down` removes it in reverse.
// Objects inside a namespace (veths, addresses, routes) go with the namespace and are not listed.
struct JournalEntry {
  // Mount: the lab's run dir tmpfs; Path: a file, symlink or directory tree;
  // Netns/Uts: a pinned namespace (inside the run dir: it goes with its unmount).
  enum class Kind { Mount, Path, Netns, Uts, Cgroup } kind;
  std::string path;
  bool operator==(const JournalEntry&) const = default;
};

struct Plan {
  std::string lab;
  int pool = 0;
  std::vector<JournalEntry> journal;  // written before the first action runs
  std::vector<Action> actions;
  int namespaces = 0, veths = 0, routes = 0;  // for progress and reports
};

struct LabModel {
  Scenario scenario;
  Topology topo;
  AddressPlan addresses;
  std::vector<std::vector<Route>> routes;
};

// Scenario -> topology -> addresses -> routes, all pure.
Result<LabModel> build_model(const Scenario& scenario, int pool);

Plan make_plan(const LabModel& model, const LabPaths& paths, int pool);

}  // namespace fabemu
