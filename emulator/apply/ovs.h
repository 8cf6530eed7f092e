// The lab's Open vSwitch: its own ovsdb-server and ovs-vswitchd in the lab's OVS namespace,
// bridges through ovs-vsctl and flows through ovs-ofctl (argv vectors, never a shell).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "plan/plan.h"
#include "util/result.h"

namespace fabemu {

// Paths of the OVS programs fabemu drives; the error names what is missing and the package.
struct OvsTools {
  std::string ovsdb_tool, ovsdb_server, vswitchd, vsctl, ofctl, schema;
};
Result<OvsTools> find_ovs_tools();

// "3.1.0": what `ovs-vswitchd --version` says, for `status` and the doctor.
Result<std::string> ovs_version(const OvsTools& tools);

// Whether OVS's kernel datapath can be used: the openvswitch module's genetlink family resolves
// (the kernel loads the module on that lookup where it can). Returns the family's id; the error
// says why not.
Result<int> probe_ovs_kernel_datapath();

// The environment every OVS program of the lab runs with: its run dir for sockets, pid files,
// database and logs, so that a system OVS (/var/run/openvswitch) is never touched. Also what
// `fabemu exec LAB:SWITCH` sets, so that ovs-vsctl and ovs-ofctl there reach the lab's daemons.
std::vector<std::pair<std::string, std::string>> ovs_env(const std::string& dir);

// The calling thread must be in the OVS namespace: the daemons start in it. Creates the
// database and starts both daemons detached; they end with the namespace's processes at `down`.
Result<void> start_ovs_daemons(const OvsTools& tools, const StartOvs& a);

// Creates every bridge with its ports in one OVSDB transaction (ovs-vsctl waits until
// ovs-vswitchd has them), then loads each bridge's groups and flows from a bundle file in a.dir
// (NAME.bundle).
Result<void> configure_ovs_bridges(const OvsTools& tools, const ConfigureOvs& a);

// Replaces all of a running bridge's flows and groups by `b`'s in one atomic bundle (a fault
// rerouting the fabric around a failed link): no packet sees a half-changed table.
Result<void> replace_ovs_flows(const OvsTools& tools, const std::string& dir, const OvsBridge& b);

}  // namespace fabemu
