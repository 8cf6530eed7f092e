// Attaching the link model at clsact egress, and the balancer at ingress, with libbpf, from a
// thread inside the port's namespace (rtnetlink and ifindexes are per namespace).
#include "shaping/attachment.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <utility>

#include "ebpf/link_shaper.h"
#include "util/bpf_sys.h"
#include "util/cleanup_failure.h"
#include "util/netns.h"

namespace fabemu {

namespace {

// Our filter's identity on the hook. Priority 1 runs before filters added at tc's default
// priority; the handle is arbitrary but fixed, so a re-attach replaces rather than stacks.
constexpr uint32_t kTcHandle = 0xfabe;
constexpr uint32_t kTcPriority = 1;

struct NsId {
  uint64_t dev = 0, ino = 0;
};

// The calling thread's network namespace.
Result<NsId> current_ns() {
  struct stat st {};
  if (::stat("/proc/thread-self/ns/net", &st) != 0)
    return errno_error("stat /proc/thread-self/ns/net");
  return NsId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

// tcx by BPF_PROG_ATTACH: persistent like a tc filter (a bpf link would go with our fd).
// 0, or -errno; EEXIST when this program is already attached there.
int tcx_attach(uint32_t ifindex, int prog_fd, uint32_t attach_type = kBpfTcxEgress) {
  bpf_attr attr{};
  attr.target_fd = ifindex;  // target_ifindex in newer headers: the same field
  attr.attach_bpf_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = attach_type;
  return sys_bpf(BPF_PROG_ATTACH, &attr) == 0 ? 0 : -errno;
}

int tcx_detach(uint32_t ifindex, int prog_fd) {
  bpf_attr attr{};
  attr.target_fd = ifindex;
  attr.attach_bpf_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = kBpfTcxEgress;
  return sys_bpf(BPF_PROG_DETACH, &attr) == 0 ? 0 : -errno;
}

// Runs f() in the network namespace at `path` (on a thread of its own: the caller's threads
// never change namespace), or, with an empty path, right here.
Result<void> in_namespace(const std::string& path, const std::function<Result<void>()>& f) {
  return path.empty() ? f() : run_in_netns(path, f);
}

std::string where(const std::string& ifname, const std::string& netns_path) {
  return ifname + (netns_path.empty() ? "" : " in " + netns_path);
}

bpf_tc_hook tc_hook(uint32_t ifindex, bpf_tc_attach_point point = BPF_TC_EGRESS) {
  bpf_tc_hook hook{};
  hook.sz = sizeof(hook);
  hook.ifindex = static_cast<int>(ifindex);
  hook.attach_point = point;
  return hook;
}

bpf_tc_opts filter_opts(int prog_fd) {
  bpf_tc_opts opts{};
  opts.sz = sizeof(opts);
  opts.prog_fd = prog_fd;
  opts.handle = kTcHandle;
  opts.priority = kTcPriority;
  return opts;
}

// Records that (namespace, ifname) shapes key `ifindex`, unless another namespace's port does.
Result<void> claim_port(int ports_fd, uint32_t ifindex, NsId ns, const std::string& ifname,
                        const std::string& what) {
  fabemu_port rec{};
  if (bpf_map_lookup_elem(ports_fd, &ifindex, &rec) == 0 &&
      (rec.netns_dev != ns.dev || rec.netns_ino != ns.ino)) {
    std::string other(reinterpret_cast<const char*>(rec.ifname),
                      strnlen(reinterpret_cast<const char*>(rec.ifname), sizeof(rec.ifname)));
    return make_error("attaching the link shaper to " + what + ": its ifindex " +
                          std::to_string(ifindex) + " already names port " + other +
                          " of another namespace (the maps are keyed by ifindex; give the lab's "
                          "ports lab-unique ifindexes)",
                      EEXIST);
  }
  rec = {};
  rec.netns_dev = ns.dev;
  rec.netns_ino = ns.ino;
  std::memcpy(rec.ifname, ifname.data(), std::min(ifname.size(), sizeof(rec.ifname) - 1));
  if (int err = bpf_map_update_elem(ports_fd, &ifindex, &rec, BPF_ANY); err < 0)
    return make_error("recording port " + what + " in the ports map", -err);
  return ok();
}

// Forgets the port record if it is still ours.
void unclaim_port(int ports_fd, uint32_t ifindex, uint64_t dev, uint64_t ino) {
  fabemu_port rec{};
  if (bpf_map_lookup_elem(ports_fd, &ifindex, &rec) == 0 && rec.netns_dev == dev &&
      rec.netns_ino == ino)
    bpf_map_delete_elem(ports_fd, &ifindex);
}

}  // namespace

Result<void> attach_ingress_here(int prog_fd, const std::string& ifname, uint32_t ifindex,
                                 const std::string& where_ns) {
  const std::string what = where(ifname, where_ns);
  int err = tcx_attach(ifindex, prog_fd, kBpfTcxIngress);
  if (err == 0 || err == -EEXIST) return ok();
  // EINVAL: the kernel knows no tcx attach type; anything else is a real failure.
  if (err != -EINVAL) return make_error("attaching to the tcx ingress of " + what, -err);
  bpf_tc_hook hook = tc_hook(ifindex, BPF_TC_INGRESS);
  err = bpf_tc_hook_create(&hook);
  if (err < 0 && err != -EEXIST) return make_error("creating the clsact qdisc on " + what, -err);
  bpf_tc_opts opts = filter_opts(prog_fd);
  opts.flags = BPF_TC_F_REPLACE;
  if (err = bpf_tc_attach(&hook, &opts); err < 0)
    return make_error("attaching at the ingress of " + what, -err);
  return ok();
}

Result<ShaperAttachment> ShaperAttachment::create(int prog_fd, int ports_fd,
                                                  const std::string& netns_path,
                                                  const std::string& ifname, AttachMethod method) {
  std::optional<Result<ShaperAttachment>> out;
  auto entered = in_namespace(netns_path, [&]() -> Result<void> {
    out.emplace(create_here(prog_fd, ports_fd, ifname, netns_path, method));
    return ok();
  });
  if (!entered) return entered.error();
  if (*out) (*out)->netns_path_ = netns_path;
  return std::move(*out);
}

Result<ShaperAttachment> ShaperAttachment::create_here(int prog_fd, int ports_fd,
                                                       const std::string& ifname,
                                                       const std::string& where_ns,
                                                       AttachMethod method) {
  const std::string what = where(ifname, where_ns);
  auto ns = current_ns();
  if (!ns) return ns.error();
  unsigned ifindex = ::if_nametoindex(ifname.c_str());
  if (ifindex == 0) return errno_error("finding port " + what);
  ShaperAttachment a;
  a.ports_fd_ = UniqueFd(::fcntl(ports_fd, F_DUPFD_CLOEXEC, 0));
  a.prog_fd_ = UniqueFd(::fcntl(prog_fd, F_DUPFD_CLOEXEC, 0));
  if (!a.ports_fd_.valid() || !a.prog_fd_.valid())
    return errno_error("duplicating the link shaper's fds for " + what);
  FABEMU_TRY(claim_port(ports_fd, ifindex, *ns, ifname, what));
  a.ifname_ = ifname;
  a.ifindex_ = ifindex;
  a.netns_dev_ = ns->dev;
  a.netns_ino_ = ns->ino;

  if (method != AttachMethod::Clsact) {
    int err = tcx_attach(ifindex, prog_fd);
    if (err == 0 || err == -EEXIST) {
      a.method_ = AttachMethod::Tcx;
      a.attached_ = true;
      return a;
    }
    // EINVAL: the kernel knows no tcx attach type; anything else is a real failure.
    if (method == AttachMethod::Tcx || err != -EINVAL) {
      unclaim_port(ports_fd, ifindex, ns->dev, ns->ino);
      return make_error("attaching the link shaper to the tcx egress of " + what, -err);
    }
  }
  a.method_ = AttachMethod::Clsact;
  bpf_tc_hook hook = tc_hook(ifindex);
  int err = bpf_tc_hook_create(&hook);
  if (err < 0 && err != -EEXIST) {
    unclaim_port(ports_fd, ifindex, ns->dev, ns->ino);
    return make_error("creating the clsact qdisc on " + what, -err);
  }
  a.created_hook_ = err == 0;
  a.attached_ = true;  // from here on, the destructor undoes what was made
  bpf_tc_opts opts = filter_opts(prog_fd);
  opts.flags = BPF_TC_F_REPLACE;
  if (err = bpf_tc_attach(&hook, &opts); err < 0)
    return make_error("attaching the link shaper at the egress of " + what, -err);
  return a;
}

ShaperAttachment::ShaperAttachment(ShaperAttachment&& o) noexcept
    : netns_path_(std::move(o.netns_path_)),
      ifname_(std::move(o.ifname_)),
      ifindex_(o.ifindex_),
      netns_dev_(o.netns_dev_),
      netns_ino_(o.netns_ino_),
      created_hook_(o.created_hook_),
      attached_(std::exchange(o.attached_, false)),
      method_(o.method_),
      ports_fd_(std::move(o.ports_fd_)),
      prog_fd_(std::move(o.prog_fd_)) {}

ShaperAttachment& ShaperAttachment::operator=(ShaperAttachment&& o) noexcept {
  if (this == &o) return *this;
  if (attached_) {
    if (auto r = detach(); !r) report_cleanup_failure(r.error().what());
  }
  netns_path_ = std::move(o.netns_path_);
  ifname_ = std::move(o.ifname_);
  ifindex_ = o.ifindex_;
  netns_dev_ = o.netns_dev_;
  netns_ino_ = o.netns_ino_;
  created_hook_ = o.created_hook_;
  attached_ = std::exchange(o.attached_, false);
  method_ = o.method_;
  ports_fd_ = std::move(o.ports_fd_);
  prog_fd_ = std::move(o.prog_fd_);
  return *this;
}

ShaperAttachment::~ShaperAttachment() {
  if (!attached_) return;
  if (auto r = detach(); !r) report_cleanup_failure(r.error().what());
}

Result<void> ShaperAttachment::detach() {
  if (!attached_) return ok();
  attached_ = false;
  const std::string what = where(ifname_, netns_path_);
  if (ports_fd_.valid()) unclaim_port(ports_fd_.get(), ifindex_, netns_dev_, netns_ino_);
  if (!netns_path_.empty() && ::access(netns_path_.c_str(), F_OK) != 0 && errno == ENOENT)
    return ok();  // the namespace went, and its ports and hooks with it
  return in_namespace(netns_path_, [&]() -> Result<void> {
    auto ns = current_ns();
    if (!ns) return ns.error();
    if (ns->dev != netns_dev_ || ns->ino != netns_ino_) return ok();  // another namespace now
    char name[IF_NAMESIZE] = {};
    if (!::if_indextoname(ifindex_, name) || ifname_ != name) return ok();  // the port went
    if (method_ == AttachMethod::Tcx) {
      int err = tcx_detach(ifindex_, prog_fd_.get());
      if (err < 0 && err != -ENOENT)
        return make_error("detaching the link shaper from the tcx egress of " + what, -err);
      return ok();
    }
    bpf_tc_hook hook = tc_hook(ifindex_);
    bpf_tc_opts opts = filter_opts(0);  // detach wants no prog_fd
    int err = bpf_tc_detach(&hook, &opts);
    if (err < 0 && err != -ENOENT)
      return make_error("detaching the link shaper from " + what, -err);
    if (created_hook_) {
      bpf_tc_hook both =
          tc_hook(ifindex_, static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS));
      err = bpf_tc_hook_destroy(&both);
      if (err < 0 && err != -ENOENT && err != -EINVAL)
        return make_error("removing the clsact qdisc of " + what, -err);
    }
    return ok();
  });
}

}  // namespace fabemu
