// OVS daemons and bridges: ovsdb-tool, ovsdb-server, ovs-vswitchd, ovs-vsctl, ovs-ofctl.
#include "apply/ovs.h"

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "util/files.h"
#include "util/netlink.h"
#include "util/process.h"

namespace fabemu {
namespace {

using namespace std::chrono_literals;

// ovs-ofctl processes at once; they only talk to unix sockets, from any namespace.
constexpr size_t kParallelBundles = 16;

}  // namespace

Result<OvsTools> find_ovs_tools() {
  auto path_of = [](const char* name) {
    auto p = find_program(name);
    return p ? *p : std::string();
  };
  OvsTools t{path_of("ovsdb-tool"), path_of("ovsdb-server"), path_of("ovs-vswitchd"),
             path_of("ovs-vsctl"),  path_of("ovs-ofctl"),    ""};
  std::string missing;
  for (auto [name, path] : {std::pair{"ovsdb-tool", &t.ovsdb_tool},
                            {"ovsdb-server", &t.ovsdb_server},
                            {"ovs-vswitchd", &t.vswitchd},
                            {"ovs-vsctl", &t.vsctl},
                            {"ovs-ofctl", &t.ofctl}})
    if (path->empty()) missing += std::string(missing.empty() ? "" : ", ") + name;
  for (const char* schema : {"/usr/share/openvswitch/vswitch.ovsschema",
                             "/usr/local/share/openvswitch/vswitch.ovsschema"})
    if (path_exists(schema)) t.schema = schema;
  if (t.schema.empty()) missing += std::string(missing.empty() ? "" : ", ") + "vswitch.ovsschema";
  if (!missing.empty())
    return make_error(
        "Open vSwitch is not installed (missing " + missing + "; apt install openvswitch-switch)",
        ENOENT);
  return t;
}

Result<std::string> ovs_version(const OvsTools& tools) {
  auto out = run_command({tools.vswitchd, "--version"}, {{}, 10s});
  if (!out) return out.error();
  // "ovs-vswitchd (Open vSwitch) 3.1.0"
  const std::string first = out->substr(0, out->find('\n'));
  return first.substr(first.rfind(' ') + 1);
}

Result<int> probe_ovs_kernel_datapath() {
  auto genl = NetlinkSocket::open(NETLINK_GENERIC, 5s);
  if (!genl) return genl.error();
  NetlinkMessage m(GENL_ID_CTRL, 0);
  genlmsghdr g{};
  g.cmd = CTRL_CMD_GETFAMILY;
  g.version = 1;
  m.put_header(g);
  m.put_string(CTRL_ATTR_FAMILY_NAME, "ovs_datapath");
  auto r = genl->transact(m, "resolving genetlink family ovs_datapath");
  if (!r) {
    if (errno_of(r.error()) == ENOENT)
      return make_error("no openvswitch kernel module (genetlink family ovs_datapath unknown)",
                        ENOENT);
    return r.error();
  }
  for (const std::string& reply : *r) {
    if (reply.size() < GENL_HDRLEN) continue;
    for (const NetlinkAttr& attr : parse_attrs(std::string_view(reply).substr(GENL_HDRLEN)))
      if (attr.type == CTRL_ATTR_FAMILY_ID && attr.payload.size() >= 2) {
        uint16_t id;
        std::memcpy(&id, attr.payload.data(), sizeof id);
        return static_cast<int>(id);
      }
  }
  return make_error("genetlink family ovs_datapath: no id in the reply", EPROTO);
}

std::vector<std::pair<std::string, std::string>> ovs_env(const std::string& dir) {
  return {{"OVS_RUNDIR", dir}, {"OVS_DBDIR", dir}, {"OVS_LOGDIR", dir}};
}

Result<void> start_ovs_daemons(const OvsTools& tools, const StartOvs& a) {
  const CommandOptions opts{ovs_env(a.dir), 30s};
  const std::string db = a.dir + "/conf.db", sock = "unix:" + a.dir + "/db.sock";
  auto in = [&](Result<std::string> r) -> Result<void> {
    if (!r) return r.error().context("starting the lab's Open vSwitch in " + a.ns);
    return ok();
  };
  FABEMU_TRY(in(run_command({tools.ovsdb_tool, "create", db, tools.schema}, opts)));
  // Logs go to files in the run dir only: a lab's switches should not fill the system log.
  FABEMU_TRY(in(run_command(
      {tools.ovsdb_server, db, "--remote=punix:" + a.dir + "/db.sock", "--pidfile", "--detach",
       "--no-chdir", "--log-file", "-vconsole:off", "-vsyslog:off", "-vfile:info"},
      opts)));
  FABEMU_TRY(in(run_command({tools.vsctl, "--db=" + sock, "--no-wait", "init"}, opts)));
  FABEMU_TRY(in(run_command({tools.vswitchd, sock, "--pidfile", "--detach", "--no-chdir",
                             "--log-file", "-vconsole:off", "-vsyslog:off", "-vfile:info"},
                            opts)));
  return ok();
}

Result<void> configure_ovs_bridges(const OvsTools& tools, const ConfigureOvs& a) {
  const CommandOptions opts{ovs_env(a.dir), 120s};
  std::vector<std::string> vsctl = {tools.vsctl, "--db=unix:" + a.dir + "/db.sock",
                                    "--timeout=120"};
  for (size_t i = 0; i < a.bridges.size(); ++i) {
    const OvsBridge& b = a.bridges[i];
    char dpid[17];
    std::snprintf(dpid, sizeof dpid, "%016zx", i + 1);
    // secure: a bridge without flows drops; never the L2 learning switch (which would flood
    // around the Clos's loops) while flows are still being loaded.
    vsctl.insert(vsctl.end(), {"--", "add-br", b.name, "--", "set", "bridge", b.name,
                               "datapath_type=" + a.datapath, "fail_mode=secure",
                               "other_config:datapath-id=" + std::string(dpid)});
    for (const OvsPort& p : b.ports)
      vsctl.insert(vsctl.end(), {"--", "add-port", b.name, p.ifname, "--", "set", "interface",
                                 p.ifname, "ofport_request=" + std::to_string(p.ofport)});
  }
  if (auto r = run_command(vsctl, opts); !r)
    return r.error().context("creating OVS bridges in " + a.ns);
  // One bundle (an atomic OpenFlow 1.4+ transaction) per bridge, all bridges at once:
  // ovs-vswitchd's main loop costs about the same per wakeup whatever it carries (with
  // userspace ports it polls every one), so flow_mods one by one took 108 s for a k=8
  // fat-tree, bundles one bridge at a time 14 s.
  std::vector<std::string> bundles;
  for (const OvsBridge& b : a.bridges) {
    std::string text;
    for (const auto& g : ovs_group_lines(b)) text += "group add " + g + "\n";
    for (const auto& f : ovs_flow_lines(b)) text += "flow add " + f + "\n";
    bundles.push_back(a.dir + "/" + b.name + ".bundle");
    FABEMU_TRY(write_file(bundles.back(), text));
  }
  std::vector<Result<std::string>> results(a.bridges.size(), std::string());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (size_t w = 0; w < std::min<size_t>(kParallelBundles, a.bridges.size()); ++w)
    workers.emplace_back([&] {
      for (size_t i; (i = next++) < a.bridges.size();)
        results[i] = run_command({tools.ofctl, "-O", "OpenFlow15", "bundle",
                                  "unix:" + a.dir + "/" + a.bridges[i].name + ".mgmt", bundles[i]},
                                 opts);
    });
  for (auto& t : workers) t.join();
  for (size_t i = 0; i < results.size(); ++i)
    if (!results[i])
      return results[i].error().context("loading bridge " + a.bridges[i].name + "'s flows (" +
                                        bundles[i] + ")");
  return ok();
}

Result<void> replace_ovs_flows(const OvsTools& tools, const std::string& dir, const OvsBridge& b) {
  std::string text = "flow delete\ngroup delete group_id=all\n";
  for (const auto& g : ovs_group_lines(b)) text += "group add " + g + "\n";
  for (const auto& f : ovs_flow_lines(b)) text += "flow add " + f + "\n";
  const std::string file = dir + "/" + b.name + ".reroute.bundle";
  FABEMU_TRY(write_file(file, text));
  auto r = run_command(
      {tools.ofctl, "-O", "OpenFlow15", "bundle", "unix:" + dir + "/" + b.name + ".mgmt", file},
      CommandOptions{ovs_env(dir), 30s});
  if (!r) return r.error().context("replacing bridge " + b.name + "'s flows (" + file + ")");
  return ok();
}

}  // namespace fabemu
