// FakeBackend: refuses what the kernel would refuse, and can trace a packet through the FIBs.
#include "fake_backend.h"

#include <algorithm>

namespace fabemu {

Result<void> FakeBackend::step(const std::string& what) {
  calls.push_back(what);
  if (count_++ == fail_at) return make_error(what + ": injected failure", EIO);
  return ok();
}

Result<FakeBackend::Ns*> FakeBackend::find_ns(const std::string& name) {
  auto it = namespaces.find(name);
  if (it == namespaces.end()) return make_error("namespace " + name, ENOENT);
  return &it->second;
}

Result<void> FakeBackend::create_namespace(const CreateNamespace& a) {
  FABEMU_TRY(step(describe(a)));
  if (namespaces.count(a.ns) || mounts.count(a.pin)) return make_error("namespace " + a.ns, EEXIST);
  Ns ns;
  ns.ifaces["lo"] = Iface{};
  ns.hostname = a.uts_path.empty() ? "" : a.hostname;
  namespaces[a.ns] = std::move(ns);
  mounts.insert(a.pin);
  pins[a.pin] = a.ns;
  if (!a.uts_path.empty()) mounts.insert(a.uts_path);
  return ok();
}

Result<void> FakeBackend::set_sysctl(const SetSysctl& a) {
  FABEMU_TRY(step(describe(a)));
  auto ns = find_ns(a.ns);
  if (!ns) return ns.error();
  (*ns)->sysctls[a.key] = a.value;
  return ok();
}

Result<void> FakeBackend::set_link_up(const SetLinkUp& a) {
  FABEMU_TRY(step(describe(a)));
  auto ns = find_ns(a.ns);
  if (!ns) return ns.error();
  auto it = (*ns)->ifaces.find(a.ifname);
  if (it == (*ns)->ifaces.end()) return make_error("link " + a.ifname + " in " + a.ns, ENODEV);
  it->second.up = true;
  return ok();
}

Result<void> FakeBackend::create_veth(const CreateVeth& a) {
  FABEMU_TRY(step(describe(a)));
  auto na = find_ns(a.ns_a);
  if (!na) return na.error();
  auto nb = find_ns(a.ns_b);
  if (!nb) return nb.error();
  for (const auto* name : {&a.if_a, &a.if_b})
    if (name->empty() || name->size() > 15) return make_error("interface name " + *name, EINVAL);
  if ((*na)->ifaces.count(a.if_a) || (*nb)->ifaces.count(a.if_b) ||
      (a.ns_a == a.ns_b && a.if_a == a.if_b))
    return make_error(describe(a), EEXIST);
  // A fixed ifindex must be free in its namespace, as the kernel checks (EBUSY).
  for (auto [ns, idx] : {std::pair{*na, a.ifindex_a}, {*nb, a.ifindex_b}})
    for (const auto& [_, iface] : ns->ifaces)
      if (idx && iface.ifindex == idx) return make_error(describe(a), EBUSY);
  (*na)->ifaces[a.if_a] = Iface{true, a.ns_b, a.if_b, {}, a.ifindex_a, a.gso_max_segs, {}, a.mac_a};
  (*nb)->ifaces[a.if_b] =
      Iface{false, a.ns_a, a.if_a, {}, a.ifindex_b, a.gso_max_segs, {}, a.mac_b};
  return ok();
}

Result<void> FakeBackend::create_vxlan(const CreateVxlan& a) {
  FABEMU_TRY(step(describe(a)));
  auto ns = find_ns(a.ns);
  if (!ns) return ns.error();
  if (a.ifname.empty() || a.ifname.size() > 15)
    return make_error("interface name " + a.ifname, EINVAL);
  if ((*ns)->ifaces.count(a.ifname)) return make_error(describe(a), EEXIST);
  for (const auto& [_, iface] : (*ns)->ifaces)
    if (a.ifindex && iface.ifindex == a.ifindex) return make_error(describe(a), EBUSY);
  // One VNI per tunnel on a machine: the kernel refuses a second device for it.
  for (const auto& [_, other] : namespaces)
    for (const auto& [__, iface] : other.ifaces)
      if (iface.vxlan && iface.vxlan->vni == a.vni) return make_error(describe(a), EEXIST);
  Iface i{true, "", "", {}, a.ifindex, a.gso_max_segs, {}, a.mac};
  i.vxlan = a;
  (*ns)->ifaces[a.ifname] = std::move(i);
  return ok();
}

FakeBackend FakeBackend::join(const std::vector<FakeBackend>& machines) {
  FakeBackend all;
  // Namespace names per machine, renamed where two machines have the same.
  std::map<std::string, int> count;
  for (const auto& m : machines)
    for (const auto& [name, _] : m.namespaces) ++count[name];
  auto renamed = [&](const std::string& name, size_t mi) {
    return count[name] > 1 ? name + "@m" + std::to_string(mi) : name;
  };
  for (size_t mi = 0; mi < machines.size(); ++mi) {
    for (const auto& [name, ns] : machines[mi].namespaces) {
      Ns copy = ns;
      for (auto& [_, iface] : copy.ifaces)
        if (!iface.peer_ns.empty()) iface.peer_ns = renamed(iface.peer_ns, mi);
      all.namespaces[renamed(name, mi)] = std::move(copy);
    }
    for (const auto& [name, bridges] : machines[mi].ovs_bridges)
      all.ovs_bridges[renamed(name, mi)] = bridges;
  }
  // Tunnel ends: the one with the same VNI whose machine's address is this end's remote.
  for (auto& [name, ns] : all.namespaces)
    for (auto& [ifname, iface] : ns.ifaces) {
      if (!iface.vxlan) continue;
      for (auto& [other_name, other] : all.namespaces)
        for (auto& [other_if, o] : other.ifaces)
          if (o.vxlan && &o != &iface && o.vxlan->vni == iface.vxlan->vni &&
              o.vxlan->local == iface.vxlan->remote && o.vxlan->remote == iface.vxlan->local) {
            iface.peer_ns = other_name;
            iface.peer_if = other_if;
          }
    }
  return all;
}

Result<void> FakeBackend::add_neighbour(const AddNeighbour& a) {
  FABEMU_TRY(step(describe(a)));
  auto ns = find_ns(a.ns);
  if (!ns) return ns.error();
  if (!(*ns)->ifaces.count(a.ifname)) return make_error("link " + a.ifname + " in " + a.ns, ENODEV);
  return ok();
}

Result<void> FakeBackend::add_address(const AddAddress& a) {
  FABEMU_TRY(step(describe(a)));
  auto ns = find_ns(a.ns);
  if (!ns) return ns.error();
  auto it = (*ns)->ifaces.find(a.ifname);
  if (it == (*ns)->ifaces.end()) return make_error("link " + a.ifname + " in " + a.ns, ENODEV);
  for (const auto& [_, iface] : (*ns)->ifaces)
    for (const auto& p : iface.addrs)
      if (p.addr == a.addr.addr) return make_error(describe(a), EEXIST);
  it->second.addrs.push_back(a.addr);
  return ok();
}

Result<void> FakeBackend::add_route(const AddRoute& a) {
  FABEMU_TRY(step(describe(a)));
  auto ns = find_ns(a.ns);
  if (!ns) return ns.error();
  if (a.hops.empty()) return make_error(describe(a) + ": no next hop", EINVAL);
  for (const auto& r : (*ns)->routes)
    if (r.dst == a.dst) return make_error(describe(a), EEXIST);
  for (const auto& h : a.hops) {
    auto it = (*ns)->ifaces.find(h.ifname);
    if (it == (*ns)->ifaces.end()) return make_error(describe(a), ENODEV);
    if (!it->second.up) return make_error(describe(a) + ": link down", ENETDOWN);
    bool connected = std::any_of(it->second.addrs.begin(), it->second.addrs.end(),
                                 [&](const Prefix& p) { return p.contains(h.gateway); });
    if (!connected)
      return make_error(describe(a) + ": gateway not on a connected subnet", ENETUNREACH);
  }
  if (a.src) {
    bool local = false;
    for (const auto& [_, iface] : (*ns)->ifaces)
      for (const auto& p : iface.addrs) local |= p.addr == *a.src;
    if (!local)
      return make_error(describe(a) + ": preferred source is not a local address", EINVAL);
  }
  (*ns)->routes.push_back(a);
  return ok();
}

Result<void> FakeBackend::make_dir(const MakeDir& a) {
  FABEMU_TRY(step(describe(a)));
  dirs.insert(a.path);
  return ok();
}

Result<void> FakeBackend::make_symlink(const MakeSymlink& a) {
  FABEMU_TRY(step(describe(a)));
  if (files.count(a.path)) return make_error(describe(a), EEXIST);
  files.insert(a.path);
  return ok();
}

Result<void> FakeBackend::write_file(const WriteFile& a) {
  FABEMU_TRY(step(describe(a)));
  files.insert(a.path);
  return ok();
}

Result<void> FakeBackend::create_cgroup(const CreateCgroup& a) {
  FABEMU_TRY(step(describe(a)));
  cgroups.insert(a.path);
  return ok();
}

Result<void> FakeBackend::load_shaper(const LoadShaper& a) {
  FABEMU_TRY(step(describe(a)));
  loaded_pin_dir_ = a.pin_dir;
  bpf_pins.insert(a.pin_dir);
  return ok();
}

Result<void> FakeBackend::balance_switch(const BalanceSwitch& a) {
  FABEMU_TRY(step(describe(a)));
  if (loaded_pin_dir_.empty()) return make_error(describe(a) + ": no link model loaded", EINVAL);
  auto ns = find_ns(a.ns);
  if (!ns) return ns.error();
  for (const auto& p : a.ports)
    if (!(*ns)->ifaces.count(p.ifname))
      return make_error("port " + p.ifname + " in " + a.ns, ENODEV);
  return ok();
}

Result<void> FakeBackend::shape_port(const ShapePort& a) {
  FABEMU_TRY(step(describe(a)));
  if (loaded_pin_dir_.empty()) return make_error(describe(a) + ": no link model loaded", EINVAL);
  auto ns = find_ns(a.ns);
  if (!ns) return ns.error();
  auto it = (*ns)->ifaces.find(a.ifname);
  if (it == (*ns)->ifaces.end()) return make_error("port " + a.ifname + " in " + a.ns, ENODEV);
  if (it->second.ifindex != a.ifindex)
    return make_error(describe(a) + ": the port's ifindex is " + std::to_string(it->second.ifindex),
                      EINVAL);
  // The real maps are keyed by ifindex for the whole lab (see ShaperAttachment).
  const std::string who = a.ns + "/" + a.ifname;
  auto [key, fresh] = shaped_keys_.emplace(a.ifindex, who);
  if (!fresh && key->second != who) return make_error(describe(a) + ": ifindex taken", EEXIST);
  it->second.shaped = a;
  return ok();
}

Result<void> FakeBackend::create_rxe(const CreateRxe& a) {
  FABEMU_TRY(step(describe(a)));
  auto ns = find_ns(a.ns);
  if (!ns) return ns.error();
  auto it = (*ns)->ifaces.find(a.netdev);
  if (it == (*ns)->ifaces.end()) return make_error(describe(a), ENODEV);
  if (rxe.count(a.name)) return make_error(describe(a), EEXIST);
  for (const auto& [name, dev] : rxe)  // rxe allows one device per netdev
    if (dev.ns == a.ns && dev.netdev == a.netdev) return make_error(describe(a), EEXIST);
  rxe[a.name] = a;
  return ok();
}

Result<void> FakeBackend::disable_offloads(const DisableOffloads& a) {
  FABEMU_TRY(step(describe(a)));
  auto ns = find_ns(a.ns);
  if (!ns) return ns.error();
  auto it = (*ns)->ifaces.find(a.ifname);
  if (it == (*ns)->ifaces.end()) return make_error(describe(a), ENODEV);
  it->second.offloads_off = true;
  return ok();
}

Result<void> FakeBackend::start_ovs(const StartOvs& a) {
  FABEMU_TRY(step(describe(a)));
  FABEMU_TRY(find_ns(a.ns));
  if (!dirs.count(a.dir)) return make_error(describe(a) + ": no directory " + a.dir, ENOENT);
  if (!ovs_running.insert(a.ns).second) return make_error(describe(a), EEXIST);
  return ok();
}

Result<void> FakeBackend::start_router(const StartRouter& a) {
  FABEMU_TRY(step(describe(a)));
  FABEMU_TRY(find_ns(a.ns));
  for (const std::string& d : {a.etc_dir, a.run_dir})
    if (!dirs.count(d)) return make_error(describe(a) + ": no directory " + d, ENOENT);
  for (const std::string& d : a.daemons)
    if (!files.count(a.etc_dir + "/" + d + ".conf"))
      return make_error(describe(a) + ": no " + d + ".conf", ENOENT);
  if (!routers.emplace(a.ns, a.daemons).second) return make_error(describe(a), EEXIST);
  return ok();
}

Result<void> FakeBackend::await_routes(const AwaitRoutes& a) {
  FABEMU_TRY(step(describe(a)));
  // Nothing converges here: the daemons must at least have been started.
  if (!routers.count(a.ns)) return make_error(describe(a) + ": no FRR in " + a.ns, ESRCH);
  return ok();
}

Result<void> FakeBackend::configure_ovs(const ConfigureOvs& a) {
  FABEMU_TRY(step(describe(a)));
  auto ns = find_ns(a.ns);
  if (!ns) return ns.error();
  if (!ovs_running.count(a.ns))
    return make_error(describe(a) + ": ovs-vswitchd not running", ECONNREFUSED);
  std::set<std::string> names, ports;
  for (const OvsBridge& b : a.bridges) {
    // The bridge's own (internal) port is a netdev of the namespace too.
    if (!names.insert(b.name).second || (*ns)->ifaces.count(b.name))
      return make_error(describe(a) + ": bridge " + b.name, EEXIST);
    std::set<int> ofports;
    for (const OvsPort& p : b.ports) {
      if (!(*ns)->ifaces.count(p.ifname))
        return make_error("port " + p.ifname + " in " + a.ns, ENODEV);
      if (!ports.insert(p.ifname).second || !ofports.insert(p.ofport).second)
        return make_error(describe(a) + ": port " + p.ifname + " twice", EEXIST);
    }
  }
  ovs_bridges[a.ns] = a.bridges;
  return ok();
}

Result<void> FakeBackend::mount_run_dir(const std::string& dir) {
  calls.push_back("mount " + dir);
  mounts.insert(dir);
  return ok();
}

void FakeBackend::unpin(const std::string& pin) {
  mounts.erase(pin);
  auto p = pins.find(pin);
  if (p == pins.end()) return;
  auto it = namespaces.find(p->second);
  pins.erase(p);
  if (it == namespaces.end()) return;
  // ...and the rxe devices and OVS daemons in them.
  ovs_running.erase(it->first);
  ovs_bridges.erase(it->first);
  std::erase_if(rxe, [&](const auto& dev) { return dev.second.ns == it->first; });
  // Deleting a namespace deletes its veths, and with them their peers.
  for (auto& [name, iface] : it->second.ifaces)
    if (!iface.peer_ns.empty() && namespaces.count(iface.peer_ns))
      namespaces[iface.peer_ns].ifaces.erase(iface.peer_if);
  namespaces.erase(it);
}

Result<void> FakeBackend::remove(const JournalEntry& e) {
  calls.push_back("remove " + e.path);
  auto under = [&](const std::string& p) { return p.rfind(e.path + "/", 0) == 0 || p == e.path; };
  switch (e.kind) {
    case JournalEntry::Kind::Mount: {
      // Detaching the run dir takes every pin inside it along.
      std::vector<std::string> inside;
      for (const auto& m : mounts)
        if (under(m)) inside.push_back(m);
      for (const auto& m : inside) unpin(m);
      break;
    }
    case JournalEntry::Kind::Netns:
      unpin(e.path);
      break;
    case JournalEntry::Kind::Uts:
      mounts.erase(e.path);
      break;
    case JournalEntry::Kind::Path:
      for (auto* set : {&dirs, &files}) std::erase_if(*set, under);
      break;
    case JournalEntry::Kind::Cgroup:
      cgroups.erase(e.path);
      break;
    case JournalEntry::Kind::Pins:
      bpf_pins.erase(e.path);
      break;
    case JournalEntry::Kind::Rdma:
      rxe.erase(e.path);
      break;
  }
  return ok();
}

const AddRoute* FakeBackend::route_for(const std::string& ns, Ipv4 dst) const {
  const AddRoute* best = nullptr;
  for (const auto& r : namespaces.at(ns).routes)
    if (r.dst.contains(dst) && (!best || r.dst.len > best->dst.len)) best = &r;
  return best;
}

std::optional<Ipv4> FakeBackend::source_for(const std::string& ns_name, Ipv4 dst) const {
  const Ns& ns = namespaces.at(ns_name);
  int best_len = -1;
  std::optional<Ipv4> src;
  for (const auto& [name, iface] : ns.ifaces)
    for (const auto& p : iface.addrs)
      if (p.len > best_len && p.len < 32 && p.contains(dst)) {
        best_len = p.len;
        src = p.addr;
      }
  for (const auto& r : ns.routes)
    if (r.dst.len > best_len && r.dst.contains(dst)) {
      best_len = r.dst.len;
      const auto& out = ns.ifaces.at(r.hops.front().ifname);
      src = r.src               ? r.src
            : out.addrs.empty() ? std::nullopt
                                : std::optional(out.addrs.front().addr);
    }
  return src;
}

std::vector<std::string> FakeBackend::trace(const std::string& start, Ipv4 dst, int max_hops,
                                            size_t ecmp_choice) const {
  std::vector<std::string> path{start};
  std::string cur = start;
  std::string in_if;           // where the packet entered `cur`
  std::optional<Mac> dst_mac;  // the Ethernet destination a bridge wrote
  for (int hop = 0; hop < max_hops; ++hop) {
    const Ns& ns = namespaces.at(cur);
    if (dst_mac && ns.ifaces.at(in_if).mac != dst_mac) return {};  // not for this port
    dst_mac.reset();
    if (auto bridges = ovs_bridges.find(cur); bridges != ovs_bridges.end() && !in_if.empty()) {
      const OvsBridge* bridge = nullptr;
      for (const OvsBridge& b : bridges->second)
        for (const OvsPort& p : b.ports)
          if (p.ifname == in_if) bridge = &b;
      if (!bridge) return {};
      path.back() = cur + "/" + bridge->name;
      const OvsRoute* route = nullptr;  // routes are longest prefix first
      for (const OvsRoute& r : bridge->routes)
        if (!route && r.dst.contains(dst)) route = &r;
      if (!route) return {};
      const OvsHop& h = route->hops[ecmp_choice % route->hops.size()];
      const std::string& out_if = bridge->ports.at(static_cast<size_t>(h.ofport - 1)).ifname;
      const Iface& out = ns.ifaces.at(out_if);
      if (out.mac != h.src || out.peer_ns.empty()) return {};
      dst_mac = h.dst;
      in_if = out.peer_if;
      cur = out.peer_ns;
      path.push_back(cur);
      continue;
    }
    // Local address: delivered.
    for (const auto& [_, iface] : ns.ifaces)
      for (const auto& p : iface.addrs)
        if (p.addr == dst) return path;
    // Longest prefix match over connected subnets and static routes.
    int best_len = -1;
    std::string out_if;
    for (const auto& [name, iface] : ns.ifaces)
      for (const auto& p : iface.addrs)
        if (iface.up && p.len > best_len && p.len < 32 && p.contains(dst)) {
          best_len = p.len;
          out_if = name;
        }
    for (const auto& r : ns.routes)
      if (r.dst.len > best_len && r.dst.contains(dst)) {
        best_len = r.dst.len;
        out_if = r.hops[ecmp_choice % r.hops.size()].ifname;
      }
    if (best_len < 0) return {};
    const Iface& iface = ns.ifaces.at(out_if);
    if (iface.peer_ns.empty()) return {};
    in_if = iface.peer_if;
    cur = iface.peer_ns;
    path.push_back(cur);
  }
  return {};
}

}  // namespace fabemu
