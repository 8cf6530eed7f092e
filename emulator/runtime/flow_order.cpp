// TelemetrySampler::order(): the balancers' order counters and path changes, and every local
// host's TCP counters, read at a step's bounds.
#include <sched.h>

#include <cstdio>
#include <map>
#include <thread>

#include "runtime/telemetry.h"
#include "util/files.h"
#include "util/netns.h"

namespace fabemu {

namespace {

// "h1:40312>h9:5201" or "h1>h9 qp 0x11"; an address no host has is written out.
std::string flow_name(const FlowOrderCounters& f, const std::map<uint32_t, std::string>& hosts) {
  auto host = [&](uint32_t a) {
    auto it = hosts.find(a);
    return it != hosts.end() ? it->second : Ipv4{a}.str();
  };
  if (f.roce) {
    char qp[16];
    std::snprintf(qp, sizeof qp, "0x%x", f.qp);
    return host(f.saddr) + ">" + host(f.daddr) + " qp " + qp;
  }
  return host(f.saddr) + ":" + std::to_string(f.sport) + ">" + host(f.daddr) + ":" +
         std::to_string(f.dport);
}

// Every local host's TCP counters, summed: one thread that enters each host's namespace in
// turn (the caller's threads never change namespace).
Result<TcpCounters> hosts_tcp(const LabModel& m, const LabPaths& paths) {
  Result<TcpCounters> out = TcpCounters{};
  std::thread worker([&] {
    for (int h : m.topo.hosts()) {
      if (!local_node(m, h)) continue;
      const std::string ns = node_netns_path(m, paths, h);
      auto fd = open_namespace(ns);
      if (!fd) return void(out = fd.error());
      if (auto r = enter_namespace(fd->get(), CLONE_NEWNET, ns); !r) return void(out = r.error());
      auto snmp = read_file("/proc/thread-self/net/snmp");
      auto netstat = read_file("/proc/thread-self/net/netstat");
      if (!snmp) return void(out = snmp.error());
      if (!netstat) return void(out = netstat.error());
      *out += parse_tcp_counters(*snmp, *netstat);
    }
  });
  worker.join();
  return out;
}

}  // namespace

OrderSnapshot TelemetrySampler::order() {
  OrderSnapshot s;
  auto note = [&](const Error& e) {
    std::lock_guard lock(mu_);
    if (error_.empty()) error_ = e.what();
  };
  if (maps_) {
    const Topology& t = model_.topo;
    std::map<uint32_t, std::string> hosts;
    for (int h : t.hosts())
      for (int l : t.links_of(h)) hosts[model_.addresses.address_of(t, l, h).v] = t.nodes[h].name;
    if (auto flows = maps_->flow_order()) {
      for (const auto& f : *flows) {
        FlowOrder o{flow_name(f, hosts), f.frames, f.reordered};
        s.flows[o.flow] = o;
      }
    } else {
      note(flows.error());
    }
    if (auto b = maps_->balance_totals()) {
      s.moves = b->moves;
      s.down_skips = b->down_skips;
      s.no_member = b->no_member;
    } else {
      note(b.error());
    }
  }
  if (auto tcp = hosts_tcp(model_, paths_))
    s.tcp = *tcp;
  else
    note(tcp.error());
  return s;
}

}  // namespace fabemu
