// FRR daemons in a router's namespace, each router a small container of its own: /etc/frr and
// /run/frr are its directories in the lab's run dir, bind-mounted in a mount namespace that the
// daemons keep (and that `fabemu exec` recreates for vtysh).
#include "apply/frr.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <map>

#include "util/files.h"
#include "util/netns.h"
#include "util/process.h"

namespace fabemu {

Result<FrrTools> find_frr(const std::vector<std::string>& daemons) {
  FrrTools t;
  for (const std::string& d : daemons)
    if (::access((t.dir + "/" + d).c_str(), X_OK) != 0)
      return make_error("routing: bgp needs FRR's " + d + " (" + t.dir + "/" + d +
                            " is missing; Debian and Ubuntu: apt install frr)",
                        ENOENT);
  const passwd* pw = ::getpwnam("frr");
  const group* gr = ::getgrnam("frr");
  if (!pw || !gr)
    return make_error(
        "routing: bgp: FRR's daemons run as user frr, which does not exist "
        "(reinstall the frr package)",
        ENOENT);
  t.uid = pw->pw_uid;
  t.gid = gr->gr_gid;
  // The mount points inside each router's view; the package makes them, a system without
  // systemd's tmpfiles may not have /run/frr yet.
  for (const char* dir : {"/etc/frr", "/run/frr"})
    if (!path_exists(dir)) FABEMU_TRY(make_dirs(dir, 0755));
  return t;
}

Result<void> start_frr_daemons(const FrrTools& tools, const StartRouter& a) {
  for (const std::string& dir : {a.etc_dir, a.run_dir})
    if (::chown(dir.c_str(), tools.uid, tools.gid) != 0)
      return errno_error("giving " + dir + " to user frr");
  CommandOptions opts;
  opts.timeout = std::chrono::seconds(30);
  opts.before_exec = [a]() -> Result<void> {
    FABEMU_TRY(enter_private_mounts());
    FABEMU_TRY(bind_mount(a.etc_dir, "/etc/frr"));
    return bind_mount(a.run_dir, "/run/frr");
  };
  for (const std::string& d : a.daemons) {
    // datacenter: FRR's profile for fabrics (eBGP advertisement interval 0, fast timers).
    auto r = run_command({tools.dir + "/" + d, "-d", "-F", "datacenter", "-f",
                          "/etc/frr/" + d + ".conf", "-i", "/run/frr/" + d + ".pid"},
                         opts);
    if (!r)
      return r.error().context("starting " + d + " for " + a.node + " (logs: " + a.run_dir + ")");
  }
  return ok();
}

std::vector<std::string> missing_routes(const AwaitRoutes& a,
                                        const std::vector<RtnlSocket::KernelRoute>& fib,
                                        size_t max) {
  std::map<std::string, const RtnlSocket::KernelRoute*> by_dst;
  for (const auto& r : fib) by_dst[r.dst.str()] = &r;
  auto list = [](const std::vector<Ipv4>& v) {
    std::string s;
    for (const Ipv4& ip : v) s += (s.empty() ? "" : " ") + ip.str();
    return s;
  };
  std::vector<std::string> out;
  for (const auto& e : a.routes) {
    auto it = by_dst.find(e.dst.str());
    if (it != by_dst.end() && it->second->gateways == e.gateways) continue;
    if (out.size() < max)
      out.push_back(e.dst.str() +
                    (it == by_dst.end() ? " absent" : " via " + list(it->second->gateways)) +
                    " (want " + list(e.gateways) + ")");
    else
      break;
  }
  return out;
}

}  // namespace fabemu
