// Probes run in a throwaway network namespace: each one creates the real kernel object.
#include "doctor/namespace_probes.h"

#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "apply/rtnl.h"
#include "apply/veth.h"
#include "doctor/rtnl.h"
#include "util/files.h"
#include "util/netlink.h"
#include "util/netns.h"

namespace fabemu::doctor {

namespace {

// Generous for a local kernel (answers take microseconds) yet keeps the worst case of a
// wedged subsystem far below a second per request.
constexpr std::chrono::milliseconds kReplyTimeout{250};

// The port every link, qdisc and BPF probe uses; veth is what fabemu's ports are.
constexpr char kPort[] = "fe-veth0";
constexpr char kPeer[] = "fe-veth1";

// The namespace identity of this thread, to prove that unshare really moved it.
std::optional<ino_t> thread_ns_inode(const char* kind) {
  struct stat st;
  std::string path = std::string("/proc/thread-self/ns/") + kind;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st.st_ino;
}

// unshare() for this thread, checked: every probe after it relies on not being in the host's
// namespace, so "success" that left the namespace unchanged counts as failure.
Result<void> unshare_checked(int flag, const char* kind) {
  std::optional<ino_t> before = thread_ns_inode(kind);
  if (unshare_retrying(flag) != 0)
    return errno_error(std::string("unshare(CLONE_NEW") + (flag == CLONE_NEWNET ? "NET" : "UTS") +
                       ")");
  std::optional<ino_t> after = thread_ns_inode(kind);
  if (!before || !after || *before == *after)
    return make_error(std::string("unshare succeeded but the thread's ") + kind +
                      " namespace did not change");
  return ok();
}

Ipv4 ipv4(const char* text) {
  return parse_ipv4(text).value_or(Ipv4{});
}

class NamespaceProbes {
 public:
  std::vector<FeatureProbe> run() {
    if (probe_netns()) {
      probe_uts_ns();
      auto rtnl = NetlinkSocket::open(NETLINK_ROUTE, kReplyTimeout);
      auto links = RtnlSocket::open();  // libnl's, as `up` uses it
      if (rtnl && links) {
        rtnl_.emplace(std::move(*rtnl));
        links_.emplace(std::move(*links));
        probe_veth();
        probe_bridge();
        probe_ecmp();
        probe_qdiscs();
        probe_ifb();
      } else {
        std::string why = "no rtnetlink socket: " + describe(rtnl ? links.error() : rtnl.error());
        for (const char* id : {"veth", "bridge", "ecmp", "sch_netem", "sch_tbf", "ifb"})
          skip(id, why);
      }
    }
    return std::move(out_);
  }

 private:
  void record(const char* id, ProbeStatus status, std::string detail, std::string cost = {}) {
    out_.push_back({id, {}, status, std::move(detail), std::move(cost)});
  }
  void skip(const char* id, const std::string& why) {
    record(id, ProbeStatus::Unknown, "not tried: " + why);
  }

  bool probe_netns() {
    auto r = unshare_checked(CLONE_NEWNET, "net");
    if (!r) {
      record("netns", ProbeStatus::No, describe(r.error()));
      // Without a namespace of our own, creating links would touch the host: try nothing else.
      for (const char* id : {"uts_ns", "veth", "bridge", "ecmp", "sch_netem", "sch_tbf", "ifb"})
        skip(id, "no throwaway network namespace to try it in");
      return false;
    }
    record("netns", ProbeStatus::Yes, "unshare(CLONE_NEWNET) on a probe thread");
    return true;
  }

  void probe_uts_ns() {
    auto r = unshare_checked(CLONE_NEWUTS, "uts");
    if (!r) return record("uts_ns", ProbeStatus::No, describe(r.error()));
    // The hostname is what Open MPI and users key on; setting it is the point of the namespace.
    static const char kName[] = "fabemu-probe";
    if (::sethostname(kName, sizeof(kName) - 1) != 0)
      return record("uts_ns", ProbeStatus::Partial,
                    describe(errno_error("unshare(CLONE_NEWUTS) worked, but sethostname")),
                    "hosts cannot have their own hostnames");
    record("uts_ns", ProbeStatus::Yes, "unshare(CLONE_NEWUTS) and sethostname inside it");
  }

  // A veth pair made and brought up as `up` makes a lab's ports (apply/veth.h, apply/rtnl.h),
  // both ends in this thread's namespace; their ifindexes.
  Result<std::pair<int, int>> make_veth(const char* a, const char* b) {
    UniqueFd ns(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!ns.valid()) return errno_error("opening the probe's namespace");
    FABEMU_TRY(create_veth_pair(*rtnl_, {ns.get(), a}, {ns.get(), b}, 1500, 0));
    auto ia = link_index(a);
    auto ib = link_index(b);
    if (!ia || !ib) return (ia ? ib : ia).error();
    FABEMU_TRY(links_->set_up(*ib, b));  // end a comes up with the pair
    return std::pair{*ia, *ib};
  }

  void probe_veth() {
    auto made = make_veth(kPort, kPeer);
    if (!made) return record("veth", ProbeStatus::No, describe(made.error()));
    std::tie(port_, peer_) = *made;
    record("veth", ProbeStatus::Yes,
           std::string("created veth pair ") + kPort + "/" + kPeer +
               " and brought it up, as `up` makes a lab's ports");
  }

  void probe_bridge() {
    auto r = create_link(*rtnl_, "fe-br0", "bridge");
    if (!r) return record("bridge", ProbeStatus::No, describe(r.error()));
    if (!peer_) return record("bridge", ProbeStatus::Yes, "created bridge fe-br0 (no port tried)");
    auto br = link_index("fe-br0");
    if (!br) return record("bridge", ProbeStatus::No, describe(br.error()));
    auto port = set_link_master(*rtnl_, peer_, *br);
    if (!port)
      return record("bridge", ProbeStatus::Partial,
                    "created bridge fe-br0, but " + describe(port.error()),
                    "bridges cannot take ports: fabric.switch: bridge is unusable");
    record("bridge", ProbeStatus::Yes, std::string("created bridge fe-br0 with port ") + kPeer);
  }

  void probe_ecmp() {
    // Two veths, each with a /30 whose far end is the gateway: a router with two uplinks.
    const char* names[2][2] = {{"fe-ecmp0a", "fe-ecmp0b"}, {"fe-ecmp1a", "fe-ecmp1b"}};
    const char* locals[2] = {"10.255.0.1", "10.255.1.1"};
    const char* gateways[2] = {"10.255.0.2", "10.255.1.2"};
    std::vector<RtnlSocket::Hop> hops;
    for (int i = 0; i < 2; ++i) {
      auto made = make_veth(names[i][0], names[i][1]);
      if (!made)
        return record("ecmp", ProbeStatus::Unknown, "not tried: " + describe(made.error()));
      auto addr = links_->add_address(made->first, Prefix{ipv4(locals[i]), 30}, names[i][0]);
      if (!addr) return record("ecmp", ProbeStatus::Unknown, describe(addr.error()));
      hops.push_back({ipv4(gateways[i]), made->first});
    }
    // As `up` routes a switch's ECMP group (apply/rtnl.h).
    auto route =
        links_->add_route(Prefix{ipv4("10.254.0.0"), 24}, hops, std::nullopt, "ecmp probe");
    if (!route) return record("ecmp", ProbeStatus::No, describe(route.error()));
    // Without the L4 hash every flow between two hosts takes one path (RoCEv2 entropy is the
    // UDP source port). The sysctl is per namespace, so this only changes the probe's own.
    auto policy = fabemu::write_file("/proc/sys/net/ipv4/fib_multipath_hash_policy", "1");
    if (!policy)
      return record("ecmp", ProbeStatus::Partial,
                    "2-nexthop route accepted, but " + describe(policy.error()),
                    "ECMP hashes on L3 only: flows between one pair of hosts take one path");
    record("ecmp", ProbeStatus::Yes,
           "2-nexthop route 10.254.0.0/24 accepted; L4 hash policy (fib_multipath_hash_policy=1) "
           "set");
  }

  // Adds `m` as the root qdisc of the port, then removes it so the next kind can be tried.
  void try_root_qdisc(const char* id, const std::string& kind, NetlinkMessage m) {
    auto r = rtnl_->transact(m, "creating qdisc " + kind);
    if (!r) return record(id, ProbeStatus::No, describe(r.error()));
    auto del = delete_root_qdisc(*rtnl_, port_);
    std::string detail = "created qdisc " + kind + " as root of " + kPort;
    if (!del) detail += " (then " + describe(del.error()) + ")";
    record(id, ProbeStatus::Yes, detail);
  }

  void probe_qdiscs() {
    if (!port_) {
      for (const char* id : {"sch_netem", "sch_tbf"}) skip(id, "no veth to put a qdisc on");
      return;
    }

    // netem takes a bare struct as TCA_OPTIONS, not nested attributes; 1 ms of delay.
    NetlinkMessage netem = new_qdisc_message(port_, TC_H_ROOT, 0, "netem");
    tc_netem_qopt nq{};
    nq.latency = 1'000'000 / 64;  // psched ticks are 64 ns
    nq.limit = 1000;
    netem.put_attr(TCA_OPTIONS, &nq, sizeof(nq));
    try_root_qdisc("sch_netem", "netem", std::move(netem));

    // 1 Mbit/s with a 32 KiB burst. An Ethernet link layer tells the kernel not to expect the
    // legacy rate table.
    NetlinkMessage tbf = new_qdisc_message(port_, TC_H_ROOT, 0, "tbf");
    tc_tbf_qopt tq{};
    tq.rate.rate = 125'000;
    tq.rate.linklayer = TC_LINKLAYER_ETHERNET;
    tq.limit = 10'000;
    const size_t options = tbf.begin_nest(TCA_OPTIONS);
    tbf.put_attr(TCA_TBF_PARMS, &tq, sizeof(tq));
    tbf.put_u32(TCA_TBF_BURST, 32 * 1024);
    tbf.end_nest(options);
    try_root_qdisc("sch_tbf", "tbf", std::move(tbf));
  }

  void probe_ifb() {
    auto r = create_link(*rtnl_, "fe-ifb0", "ifb");
    if (!r) return record("ifb", ProbeStatus::No, describe(r.error()));
    record("ifb", ProbeStatus::Yes, "created ifb device fe-ifb0");
  }

  std::optional<NetlinkSocket> rtnl_;  // raw: what `up` never makes (bridges, ifb, qdiscs)
  std::optional<RtnlSocket> links_;    // libnl's: addresses and routes, as `up` makes them
  int port_ = 0;                       // ifindex of kPort once the veth probe made it
  int peer_ = 0;
  std::vector<FeatureProbe> out_;
};

}  // namespace

std::vector<FeatureProbe> run_namespace_probes() {
  return NamespaceProbes().run();
}

}  // namespace fabemu::doctor
