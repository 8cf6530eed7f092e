// Routing around failed links: the plan without them, installed as route or flow changes.
#include "apply/reroute.h"

#include <net/if.h>

#include <map>
#include <sstream>

#include "apply/journal.h"
#include "apply/link_control.h"
#include "apply/rtnl.h"
#include "plan/ovs_switch.h"
#include "plan/plan.h"
#include "plan/switches.h"
#include "util/files.h"
#include "util/netns.h"

namespace fabemu {
namespace {

// The run dir's record: the links that are failed, and those the installed routes avoid (the
// same set unless no way around the last ones was found). Link indexes of the lab's model.
struct Record {
  std::set<int> failed, routed;
};

std::set<int> parse_links(std::istringstream& in) {
  std::set<int> out;
  for (int l; in >> l;) out.insert(l);
  return out;
}

Result<Record> read_record(const LabPaths& paths) {
  Record r;
  if (!path_exists(paths.failed_links_file())) return r;
  auto text = read_file(paths.failed_links_file());
  if (!text) return text.error();
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "failed") r.failed = parse_links(words);
    if (key == "routed") r.routed = parse_links(words);
  }
  return r;
}

Result<void> write_record(const LabPaths& paths, const Record& r) {
  std::string text = "failed";
  for (int l : r.failed) text += " " + std::to_string(l);
  text += "\nrouted";
  for (int l : r.routed) text += " " + std::to_string(l);
  return write_file(paths.failed_links_file(), text + "\n");
}

std::string route_key(const Route& r) {
  std::string k = r.dst.str();
  for (const Nexthop& h : r.nexthops) k += " " + h.gateway.str() + "@" + std::to_string(h.link);
  if (r.src) k += " src " + r.src->str();
  return k;
}

// A router's routes changed from `before` to `after`, in its namespace.
Result<void> replace_routes(const LabModel& m, const LabPaths& paths, int sw,
                            const std::vector<const Route*>& put, const std::vector<Prefix>& drop) {
  const std::string where = node_ns(m, paths, sw);
  return run_in_netns(node_netns_path(m, paths, sw), [&]() -> Result<void> {
    auto sock = RtnlSocket::open();
    if (!sock) return sock.error();
    for (const Route* r : put) {
      std::vector<RtnlSocket::Hop> hops;
      for (const Nexthop& h : r->nexthops) {
        const std::string& ifname = m.topo.links[h.link].end(sw).ifname;
        const unsigned idx = ::if_nametoindex(ifname.c_str());
        if (idx == 0) return errno_error("finding " + ifname + " in " + where);
        hops.push_back({h.gateway, static_cast<int>(idx)});
      }
      FABEMU_TRY(sock->replace_route(r->dst, hops, r->src, r->dst.str() + " in " + where));
    }
    for (const Prefix& p : drop) FABEMU_TRY(sock->delete_route(p, p.str() + " in " + where));
    return ok();
  });
}

}  // namespace

Result<Rerouter> Rerouter::open(const LabModel& model, const LabPaths& paths) {
  auto record = read_record(paths);
  if (!record) return record.error();
  Rerouter r(model, paths);
  r.failed_ = std::move(record->failed);
  return r;
}

Result<std::string> Rerouter::set_failed(const std::vector<int>& links, bool failed) {
  std::set<int> next = failed_;
  for (int l : links) {
    if (failed)
      next.insert(l);
    else
      next.erase(l);
  }
  return apply(next);
}

Result<std::string> Rerouter::apply(const std::set<int>& next_failed) {
  auto record = read_record(*paths_);
  if (!record) return record.error();
  Record r{next_failed, record->routed};
  failed_ = next_failed;
  const Switches::Reroute by = switches_of(*model_).reroute();
  if (by == Switches::Reroute::Protocol) {
    // The routers' own BGP (and BFD) move the routes; the record only says what is failed.
    r.routed = next_failed;
    FABEMU_TRY(write_record(*paths_, r));
    return std::string("BGP reroutes");
  }
  const bool ovs = by == Switches::Reroute::Flows;
  auto current = plan_routes(model_->topo, model_->addresses, record->routed);
  if (!current) return current.error();
  auto next = plan_routes(model_->topo, model_->addresses, next_failed);
  if (!next) {
    FABEMU_TRY(write_record(*paths_, r));  // failed, but the routes stay as they were
    return std::string(ovs ? "flows" : "routes") + " unchanged: no way around the failed links (" +
           next.error().what() + ")";
  }
  int switches = 0, changes = 0;
  for (int sw : model_->topo.switches()) {
    if (!local_node(*model_, sw)) continue;  // its machine reroutes it
    std::map<std::string, const Route*> before, after;
    for (const Route& route : (*current)[sw]) before[route.dst.str()] = &route;
    for (const Route& route : (*next)[sw]) after[route.dst.str()] = &route;
    std::vector<const Route*> put;
    std::vector<Prefix> drop;
    for (const auto& [dst, route] : after)
      if (!before.count(dst) || route_key(*before[dst]) != route_key(*route)) put.push_back(route);
    for (const auto& [dst, route] : before)
      if (!after.count(dst)) drop.push_back(route->dst);
    if (put.empty() && drop.empty()) continue;
    ++switches;
    changes += static_cast<int>(put.size() + drop.size());
    if (ovs)
      FABEMU_TRY(replace_bridge(sw, (*next)[sw]));  // its new routes' flows, in one bundle
    else
      FABEMU_TRY(replace_routes(*model_, *paths_, sw, put, drop));
  }
  // The balancers' groups follow the routes: a failed link's member leaves its groups.
  const std::vector<BalanceSwitch> balanced =
      ovs || !switches ? std::vector<BalanceSwitch>{} : balance_switches(*model_, *paths_, &*next);
  if (!balanced.empty()) {
    auto shaper = open_link_model(*paths_);
    if (!shaper) return shaper.error().context("moving the balancers' groups");
    for (const BalanceSwitch& b : balanced) FABEMU_TRY(shaper->rebalance(b));
  }
  r.routed = next_failed;
  FABEMU_TRY(write_record(*paths_, r));
  if (ovs)
    return "rerouted: flows and groups replaced on " + std::to_string(switches) + " OVS bridges";
  return "rerouted: " + std::to_string(changes) + " route changes on " + std::to_string(switches) +
         " switches";
}

Result<size_t> balance_from_fibs(const LabModel& m, const LabPaths& paths, LinkShaper& maps) {
  const Topology& t = m.topo;
  std::vector<std::vector<Route>> routes = m.routes;
  for (int sw : t.switches()) {
    if (!local_node(m, sw)) continue;
    std::vector<RtnlSocket::KernelRoute> fib;
    FABEMU_TRY(run_in_netns(node_netns_path(m, paths, sw), [&]() -> Result<void> {
      auto sock = RtnlSocket::open();
      if (!sock) return sock.error();
      auto k = sock->gateway_routes();
      if (!k) return k.error().context("reading " + t.nodes[sw].name + "'s FIB");
      fib = std::move(*k);
      return ok();
    }));
    // A gateway is the far end's address on one of the switch's links.
    std::map<uint32_t, int> link_of;
    for (int l : t.links_of(sw))
      link_of[m.addresses.address_of(t, l, t.links[l].peer(sw).node).v] = l;
    std::vector<Route> mine;
    for (const auto& k : fib) {
      Route r{k.dst, {}, {}};
      for (Ipv4 gw : k.gateways)
        if (auto it = link_of.find(gw.v); it != link_of.end())
          r.nexthops.push_back({gw, it->second});
      if (!r.nexthops.empty()) mine.push_back(std::move(r));
    }
    routes[sw] = std::move(mine);
  }
  const std::vector<BalanceSwitch> balanced = balance_switches(m, paths, &routes);
  for (const BalanceSwitch& b : balanced) FABEMU_TRY(maps.rebalance(b));
  return balanced.size();
}

Result<void> Rerouter::replace_bridge(int sw, const std::vector<Route>& routes) {
  if (!ovs_tools_) {
    auto tools = find_ovs_tools();
    if (!tools) return tools.error();
    ovs_tools_ = std::move(*tools);
  }
  if (pool_ < 0) {
    auto j = read_journal(paths_->journal());
    if (!j) return j.error();
    pool_ = j->pool;
  }
  return replace_ovs_flows(*ovs_tools_, paths_->ovs_dir(),
                           ovs_bridge(model_->topo, model_->addresses, routes, sw,
                                      model_->scenario.fabric, model_->scenario.seed, pool_));
}

}  // namespace fabemu
