// KernelBackend: namespaces by unshare + bind mount, links/addresses/routes by rtnetlink.
#include "apply/kernel_backend.h"

#include <linux/netlink.h>
#include <net/if.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "apply/link_control.h"
#include "apply/port_shaping.h"
#include "apply/processes.h"
#include "apply/rdma.h"
#include "apply/run_root.h"
#include "apply/veth.h"
#include "apply/vxlan.h"
#include "shaping/bpffs.h"
#include "shaping/port_setup.h"
#include "util/files.h"
#include "util/netns.h"

namespace fabemu {

namespace {
// Every rtnetlink request answers in microseconds; a kernel that takes this long is stuck.
constexpr std::chrono::seconds kNetlinkTimeout{30};
}  // namespace

Result<std::unique_ptr<KernelBackend>> KernelBackend::create(std::string netns_dir) {
  std::unique_ptr<KernelBackend> b(new KernelBackend());
  b->netns_dir_ = std::move(netns_dir);
  auto net = open_namespace("/proc/thread-self/ns/net");
  if (!net) return net.error();
  auto uts = open_namespace("/proc/thread-self/ns/uts");
  if (!uts) return uts.error();
  b->home_net_ = std::move(*net);
  b->home_uts_ = std::move(*uts);
  // Opened in our own namespace: veths are created through it, each end placed by ns fd.
  auto sock = NetlinkSocket::open(NETLINK_ROUTE, kNetlinkTimeout);
  if (!sock) return sock.error();
  b->home_raw_.emplace(std::move(*sock));
  // A big lab keeps one fd per namespace open while it builds.
  rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  return b;
}

KernelBackend::~KernelBackend() {
  (void)finish();
}

Result<void> KernelBackend::finish() {
  auto files = files_.wait();
  // A load still under way (up failed before its action) ends first, so that `down` finds
  // every pin it made.
  if (shaper_loading_.valid())
    if (auto s = shaper_loading_.get()) shaper_.emplace(std::move(*s));
  ns_fds_.clear();
  FABEMU_TRY(go_home());
  return files;
}

Result<void> KernelBackend::go_home() {
  cur_sock_.reset();
  cur_raw_.reset();
  cur_ifindex_.clear();
  if (cur_ns_.empty()) return ok();
  cur_ns_.clear();
  FABEMU_TRY(enter_namespace(home_net_.get(), CLONE_NEWNET, "home"));
  return enter_namespace(home_uts_.get(), CLONE_NEWUTS, "home");
}

void KernelBackend::start(const Plan& plan) {
  for (const JournalEntry& e : plan.journal)
    if (e.kind == JournalEntry::Kind::Mount) run_dir_ = e.path;
  // The verifier's work on the link model (0.15-0.2 s here) on another core while the
  // namespaces are made; LoadShaper takes the result.
  for (const Action& a : plan.actions)
    if (const auto* load = std::get_if<LoadShaper>(&a)) {
      shaper_loading_ = std::async(std::launch::async, [l = *load] {
        return load_link_model(l.bpffs_root, l.pin_dir, l.pfc_qdisc);
      });
      return;
    }
}

Result<void> KernelBackend::apply_parallel(std::span<const Action> actions) {
  // Workers are made from this machine's namespace, where veths are created from.
  FABEMU_TRY(go_home());
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned n = std::min({cores, 8u, static_cast<unsigned>(actions.size() / 32 + 1)});
  if (n < 2) return Backend::apply_parallel(actions);

  // A namespace's actions all go to one worker, in order; namespaces (and actions of none)
  // are dealt round.
  struct Share {
    std::vector<const Action*> actions;
    std::unique_ptr<KernelBackend> backend;
    std::optional<Error> error;
  };
  std::vector<Share> shares(n);
  std::map<std::string, unsigned> owner;
  unsigned next = 0;
  for (const Action& a : actions) {
    if (const auto* link = std::get_if<MakeSymlink>(&a)) {
      FABEMU_TRY(make_symlink(*link));  // already on a thread of its own
      continue;
    }
    unsigned w;
    if (const std::string* ns = namespace_of(a)) {
      auto [it, fresh] = owner.try_emplace(*ns, next % n);
      if (fresh) ++next;
      w = it->second;
    } else {
      w = next++ % n;
    }
    shares[w].actions.push_back(&a);
  }
  {
    std::vector<std::jthread> threads;
    for (Share& s : shares)
      threads.emplace_back([this, &s] {
        auto b = KernelBackend::create(netns_dir_);
        if (!b) return void(s.error = b.error());
        (*b)->known_ns_ = &ns_fds_;  // read-only while the workers run
        (*b)->run_dir_ = run_dir_;
        (*b)->fresh_values_ = fresh_values_;
        for (const Action* a : s.actions)
          if (auto r = (*b)->apply(*a); !r) {
            s.error = r.error();
            break;
          }
        if (auto r = (*b)->go_home(); !r && !s.error) s.error = r.error();
        s.backend = std::move(*b);
      });
  }
  std::optional<Error> first;
  for (Share& s : shares) {
    if (s.error && !first) first = s.error;
    if (!s.backend) continue;
    for (auto& [ns, fd] : s.backend->ns_fds_) ns_fds_.insert_or_assign(ns, std::move(fd));
    s.backend->ns_fds_.clear();
    fresh_.merge(s.backend->fresh_);
    fresh_values_.merge(s.backend->fresh_values_);
  }
  if (first) return *first;
  return ok();
}

Result<void> KernelBackend::enter(const std::string& ns) {
  if (ns == cur_ns_) return ok();
  auto fd = ns_fd(ns);
  if (!fd) return fd.error();
  FABEMU_TRY(enter_namespace(*fd, CLONE_NEWNET, ns));
  cur_ns_ = ns;
  cur_sock_.reset();
  cur_raw_.reset();
  cur_ifindex_.clear();
  return ok();
}

Result<NetlinkSocket*> KernelBackend::raw_socket_in(const std::string& ns) {
  FABEMU_TRY(enter(ns));
  if (!cur_raw_) {
    auto sock = NetlinkSocket::open(NETLINK_ROUTE, kNetlinkTimeout);
    if (!sock) return sock.error().context("in namespace " + ns);
    cur_raw_.emplace(std::move(*sock));
  }
  return &*cur_raw_;
}

Result<RtnlSocket*> KernelBackend::socket_in(const std::string& ns) {
  FABEMU_TRY(enter(ns));
  if (!cur_sock_) {
    auto sock = RtnlSocket::open();
    if (!sock) return sock.error().context("in namespace " + ns);
    cur_sock_.emplace(std::move(*sock));
  }
  return &*cur_sock_;
}

Result<int> KernelBackend::ns_fd(const std::string& ns) {
  if (auto it = ns_fds_.find(ns); it != ns_fds_.end()) return it->second.get();
  if (known_ns_)
    if (auto it = known_ns_->find(ns); it != known_ns_->end()) return it->second.get();
  auto fd = open_namespace(netns_dir_ + "/" + ns);
  if (!fd) return fd.error();
  int raw = fd->get();
  ns_fds_.emplace(ns, std::move(*fd));
  return raw;
}

Result<int> KernelBackend::ifindex(const std::string& ns, const std::string& ifname) {
  FABEMU_TRY(enter(ns));
  if (auto it = cur_ifindex_.find(ifname); it != cur_ifindex_.end()) return it->second;
  unsigned idx = ::if_nametoindex(ifname.c_str());
  if (idx == 0) return errno_error("finding interface " + ifname + " in " + ns);
  cur_ifindex_[ifname] = static_cast<int>(idx);
  return static_cast<int>(idx);
}

Result<void> KernelBackend::create_namespace(const CreateNamespace& a) {
  cur_sock_.reset();
  cur_raw_.reset();
  auto fd = create_pinned_namespace(a.pin, a.uts_path, a.hostname);
  // unshare may have moved us even when pinning failed.
  cur_ns_ = a.ns;
  cur_ifindex_.clear();
  if (!fd) return fd.error();
  ns_fds_[a.ns] = std::move(*fd);
  fresh_.insert(a.ns);
  return ok();
}

// The kernel keeps the /proc/sys/net/{core,ipv4,ipv6} dentries of every namespace that looked
// them up under one parent, per procfs instance, and a lookup compares against all of them: in
// /proc the N-th namespace's writes cost O(N) (here 2000 namespaces with two sysctls each:
// 3.0 s against 0.9 s without; 4368, quadratically worse). A procfs instance of our own, in the
// lab's tmpfs, for every 64 namespaces keeps that list short (1.1 s); `down` detaches them
// with the tmpfs.
Result<std::string> KernelBackend::sysctl_dir(const std::string& ns) {
  if (run_dir_.empty()) return std::string("/proc/sys/");
  if (ns != proc_ns_) {
    proc_ns_ = ns;
    if (proc_namespaces_++ % 64 == 0) {
      static std::atomic<int> instances{0};
      const std::string dir = run_dir_ + "/proc/" + std::to_string(instances++);
      // Where procfs cannot be mounted (a confined container), /proc does the same, slower.
      if (!make_dirs(dir) ||
          ::mount("proc", dir.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
        run_dir_.clear();
        return std::string("/proc/sys/");
      }
      proc_dir_ = dir;
    }
  }
  return proc_dir_ + "/sys/";
}

Result<void> KernelBackend::set_sysctl(const SetSysctl& a) {
  FABEMU_TRY(enter(a.ns));  // /proc/sys/net shows the namespace of the thread that opens it
  auto dir = sysctl_dir(a.ns);
  if (!dir) return dir.error();
  const std::string path = *dir + a.key;
  // Every new namespace starts from the same values: read a key in the first one, and skip
  // writes that would not change it in the others (half of a big lab's sysctl work).
  if (fresh_.count(a.ns)) {
    auto known = fresh_values_.find(a.key);
    if (known == fresh_values_.end()) {
      auto now = read_file(path);
      std::string v = now ? *now : "";
      while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
      known = fresh_values_.emplace(a.key, now ? v : "?").first;
    }
    if (known->second == a.value) return ok();
  }
  auto r = fabemu::write_file(path, a.value);
  if (!r && a.optional && errno_of(r.error()) == ENOENT) return ok();
  if (!r) return r.error().context("sysctl in " + a.ns);
  return ok();
}

Result<void> KernelBackend::set_link_up(const SetLinkUp& a) {
  auto idx = ifindex(a.ns, a.ifname);
  if (!idx) return idx.error();
  auto sock = socket_in(a.ns);
  if (!sock) return sock.error();
  return (*sock)->set_up(*idx, a.ifname + " in " + a.ns);
}

Result<void> KernelBackend::create_veth(const CreateVeth& a) {
  auto fa = ns_fd(a.ns_a);
  if (!fa) return fa.error();
  auto fb = ns_fd(a.ns_b);
  if (!fb) return fb.error();
  auto mac = [](const std::optional<Mac>& m) { return m ? std::optional(m->bytes) : std::nullopt; };
  auto r = create_veth_pair(*home_raw_, {*fa, a.if_a, a.ifindex_a, mac(a.mac_a)},
                            {*fb, a.if_b, a.ifindex_b, mac(a.mac_b)}, a.mtu, a.gso_max_segs);
  if (!r) return r.error().context(a.ns_a + " <-> " + a.ns_b);
  return ok();
}

Result<void> KernelBackend::create_vxlan(const CreateVxlan& a) {
  auto fd = ns_fd(a.ns);
  if (!fd) return fd.error();
  // Made from home (this machine's namespace, whose underlay carries the tunnel), so that its
  // UDP socket lives there while the device goes to the node.
  FABEMU_TRY(go_home());
  const unsigned dev = ::if_nametoindex(a.underlay_dev.c_str());
  if (dev == 0) return errno_error("finding the underlay device " + a.underlay_dev);
  auto mac = a.mac ? std::optional(a.mac->bytes) : std::nullopt;
  FABEMU_TRY(fabemu::create_vxlan({*fd, a.ifname, a.ifindex, a.vni, a.local, a.remote,
                                   static_cast<int>(dev), kVxlanPort, a.mtu, mac}));
  // In the node's namespace: one packet per skb on a shaped port (as veths are made), then up.
  auto raw = raw_socket_in(a.ns);
  if (!raw) return raw.error();
  auto idx = ifindex(a.ns, a.ifname);
  if (!idx) return idx.error();
  if (a.gso_max_segs) FABEMU_TRY(set_gso_max_segs(**raw, *idx, a.gso_max_segs));
  auto sock = socket_in(a.ns);
  if (!sock) return sock.error();
  return (*sock)->set_up(*idx, a.ifname + " in " + a.ns);
}

Result<void> KernelBackend::add_address(const AddAddress& a) {
  auto idx = ifindex(a.ns, a.ifname);
  if (!idx) return idx.error();
  auto sock = socket_in(a.ns);
  if (!sock) return sock.error();
  return (*sock)->add_address(*idx, a.addr, a.ifname + " in " + a.ns);
}

Result<void> KernelBackend::add_route(const AddRoute& a) {
  std::vector<RtnlSocket::Hop> hops;
  for (const auto& h : a.hops) {
    auto idx = ifindex(a.ns, h.ifname);
    if (!idx) return idx.error();
    hops.push_back({h.gateway, *idx});
  }
  auto sock = socket_in(a.ns);
  if (!sock) return sock.error();
  return (*sock)->add_route(a.dst, hops, a.src, a.dst.str() + " in " + a.ns, a.rto_min_ms);
}

Result<void> KernelBackend::add_neighbour(const AddNeighbour& a) {
  auto idx = ifindex(a.ns, a.ifname);
  if (!idx) return idx.error();
  auto sock = socket_in(a.ns);
  if (!sock) return sock.error();
  return (*sock)->add_neighbour(*idx, a.addr, a.mac.bytes, a.ifname + " in " + a.ns);
}

Result<void> KernelBackend::make_dir(const MakeDir& a) {
  return make_dirs(a.path);
}

Result<void> KernelBackend::make_symlink(const MakeSymlink& a) {
  // The other core makes these while this one waits on the kernel: on a disk-backed /run or
  // /etc (as on our CI machines) each costs ~0.2 ms, 0.2 s for a 512-host lab.
  files_.push([target = a.target, path = a.path]() -> Result<void> {
    if (::symlink(target.c_str(), path.c_str()) != 0)
      return errno_error("linking " + path + " to " + target);
    return ok();
  });
  return ok();
}

Result<void> KernelBackend::write_file(const WriteFile& a) {
  return fabemu::write_file(a.path, a.content);
}

Result<void> KernelBackend::create_cgroup(const CreateCgroup& a) {
  if (!cgroups_) cgroups_ = detect_cgroups();
  return fabemu::create_cgroup(*cgroups_, a.path, a.limits);
}

Result<void> KernelBackend::load_shaper(const LoadShaper& a) {
  auto loaded = shaper_loading_.valid() ? shaper_loading_.get()
                                        : load_link_model(a.bpffs_root, a.pin_dir, a.pfc_qdisc);
  if (loaded) {
    shaper_.emplace(std::move(*loaded));
    return ok();
  }
  if (!a.required) {
    (void)remove_pin_dir(a.pin_dir);  // no half-made pin dir for `status` to trip on
    return ok();
  }
  return loaded.error();
}

Result<void> KernelBackend::shape_port(const ShapePort& a) {
  if (!shaper_) return make_error(describe(a) + ": the link model is not loaded", EINVAL);
  auto sock = raw_socket_in(a.ns);  // joins the port's namespace
  if (!sock) return sock.error();
  return shape_port_here(*shaper_, a, **sock, /*set_gso=*/false);  // the veth was made with it
}

Result<void> KernelBackend::balance_switch(const BalanceSwitch& a) {
  if (!shaper_) return make_error(describe(a) + ": the link model is not loaded", EINVAL);
  FABEMU_TRY(enter(a.ns));  // the hooks are the namespace's ports'
  return shaper_->balance(a);
}

Result<void> KernelBackend::create_rxe(const CreateRxe& a) {
  FABEMU_TRY(enter(a.ns));  // the socket's namespace is where rxe finds the netdev
  auto rdma = RdmaNetlink::open();
  if (!rdma) return rdma.error().context("in namespace " + a.ns);
  auto r = rdma->add_rxe(a.name, a.netdev);
  if (!r) return r.error().context("in namespace " + a.ns);
  return ok();
}

Result<void> KernelBackend::disable_offloads(const DisableOffloads& a) {
  FABEMU_TRY(enter(a.ns));  // the ethtool ioctl names the device in the thread's namespace
  if (auto r = fabemu::disable_offloads(a.ifname, /*tx_checksum=*/true); !r)
    return r.error().context("in namespace " + a.ns);
  return ok();
}

Result<void> KernelBackend::start_ovs(const StartOvs& a) {
  auto tools = find_ovs_tools();
  if (!tools) return tools.error();
  ovs_ = std::move(*tools);
  FABEMU_TRY(enter(a.ns));  // the daemons start in this thread's namespace
  return start_ovs_daemons(*ovs_, a);
}

Result<void> KernelBackend::configure_ovs(const ConfigureOvs& a) {
  if (!ovs_) return make_error(describe(a) + ": OVS was not started", EINVAL);
  FABEMU_TRY(enter(a.ns));
  return configure_ovs_bridges(*ovs_, a);
}

Result<void> KernelBackend::start_router(const StartRouter& a) {
  if (!frr_) {
    auto tools = find_frr(a.daemons);
    if (!tools) return tools.error();
    frr_ = std::move(*tools);
  }
  FABEMU_TRY(enter(a.ns));  // the daemons start in this thread's namespace
  return start_frr_daemons(*frr_, a);
}

Result<void> KernelBackend::await_routes(const AwaitRoutes& a) {
  auto sock = socket_in(a.ns);
  if (!sock) return sock.error();
  const auto deadline = std::chrono::steady_clock::now() + a.timeout;
  for (;;) {
    auto fib = (*sock)->gateway_routes();
    if (!fib) return fib.error().context("in namespace " + a.ns);
    const auto missing = missing_routes(a, *fib);
    if (missing.empty()) return ok();
    if (std::chrono::steady_clock::now() > deadline) {
      std::string what;
      for (const auto& m : missing) what += "; " + m;
      return make_error("BGP did not converge: after " + std::to_string(a.timeout.count() / 1000) +
                            " s " + a.node + "'s FIB lacks planned routes" + what +
                            " (see `fabemu exec LAB:" + a.node +
                            " -- vtysh -c 'show bgp summary'` and the logs in its /run/frr)",
                        ETIMEDOUT);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Result<void> KernelBackend::mount_run_dir(const std::string& dir) {
  return mount_tmpfs(dir, "fabemu");
}

Result<void> KernelBackend::kill_processes(const std::vector<JournalEntry>& journal) {
  std::vector<std::string> paths, nets;  // every namespace's pin; the network ones
  for (const auto& e : journal)
    if (e.kind == JournalEntry::Kind::Netns || e.kind == JournalEntry::Kind::Uts) {
      paths.push_back(e.path);
      if (e.kind == JournalEntry::Kind::Netns) nets.push_back(e.path);
    }
  // A host a fault froze is thawed first, so that its processes can end on SIGTERM too. Only
  // the hosts' own cgroups (fabemu/LAB/HOST): thawing a shared parent would thaw another lab's
  // frozen hosts under cgroup v1.
  for (const auto& e : journal)
    if (e.kind == JournalEntry::Kind::Cgroup &&
        std::count(e.path.begin(), e.path.end(), '/') == 2) {
      if (!cgroups_) cgroups_ = detect_cgroups();
      (void)freeze_cgroup(*cgroups_, e.path, false);  // no freezer: nothing was frozen
    }
  FABEMU_TRY(kill_processes_in_namespaces(paths));
  // What the processes left: closed TCP sockets still retransmitting (a lossy link may have
  // eaten their peer's reset) would hold their namespaces for minutes once the links are gone.
  // Best effort: a socket left standing shows as `down`'s wait for the kernel running out.
  (void)abort_tcp_sockets_in_namespaces(nets);
  return ok();
}

Result<void> KernelBackend::remove(const JournalEntry& e) {
  switch (e.kind) {
    case JournalEntry::Kind::Mount:
      return unmount_tree(e.path);
    case JournalEntry::Kind::Netns:
    case JournalEntry::Kind::Uts:
      return unpin_namespace(e.path);
    case JournalEntry::Kind::Cgroup:
      if (!cgroups_) cgroups_ = detect_cgroups();
      return remove_cgroup(*cgroups_, e.path);
    case JournalEntry::Kind::Pins:
      shaper_.reset();
      return remove_pin_dir(e.path);
    case JournalEntry::Kind::Rdma: {
      // Seen from every namespace (the RDMA core's default shared mode), so from ours too. A
      // kernel without RDMA netlink has no such device to delete.
      auto rdma = RdmaNetlink::open();
      if (!rdma)
        return errno_of(rdma.error()) == EPROTONOSUPPORT ? ok() : Result<void>(rdma.error());
      return rdma->remove_if_present(e.path);
    }
    case JournalEntry::Kind::Path: {
      // Only ever delete trees that are recognisably fabemu's.
      if (e.path.find("/fabemu") == std::string::npos || e.path.size() < 10)
        return make_error("refusing to remove " + e.path + ": not a fabemu path", EPERM);
      std::error_code ec;
      std::filesystem::remove_all(e.path, ec);
      if (ec && ec != std::errc::no_such_file_or_directory)
        return make_error("removing " + e.path, ec.value());
      return ok();
    }
  }
  return ok();
}

}  // namespace fabemu
