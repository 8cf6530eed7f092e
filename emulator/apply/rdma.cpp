// RDMA netlink (NLDEV) through libnl: requests are bare attributes after the netlink header.
#include "apply/rdma.h"

#include <dirent.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "util/cleanup_failure.h"
#include "util/files.h"
#include "util/netlink.h"
#include "util/netns.h"

namespace fabemu {
namespace {

constexpr uint16_t nldev(int op) {
  return RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op);
}

struct MsgFree {
  void operator()(nl_msg* m) const { nlmsg_free(m); }
};
using Msg = std::unique_ptr<nl_msg, MsgFree>;
struct CbFree {
  void operator()(nl_cb* c) const { nl_cb_put(c); }
};
using Cb = std::unique_ptr<nl_cb, CbFree>;

// libnl folds errnos into codes of its own; the ones these requests meet, back to errnos, which
// is what users search for and what callers test.
int errno_of_nle(int nle) {
  switch (std::abs(nle)) {
    case NLE_AGAIN:
      return ETIMEDOUT;  // the socket's receive timeout
    case NLE_NOMEM:
      return ENOMEM;
    case NLE_EXIST:
      return EEXIST;
    case NLE_INVAL:
      return EINVAL;
    case NLE_NODEV:
      return ENODEV;
    case NLE_OPNOTSUPP:
      return EOPNOTSUPP;
    case NLE_PERM:
      return EPERM;
    case NLE_NOACCESS:
      return EACCES;
    case NLE_BUSY:
      return EBUSY;
    case NLE_PROTO_MISMATCH:
      return EPROTONOSUPPORT;  // socket(NETLINK_RDMA) on a kernel without the RDMA subsystem
    case NLE_AF_NOSUPPORT:
      return EAFNOSUPPORT;
    case NLE_OBJ_NOTFOUND:
      return ENOENT;
  }
  return EIO;
}

Error nl_error(const std::string& what, int nle) {
  const int err = errno_of_nle(nle);
  if (err != EIO) return make_error(what, err);
  return make_error(what + " (libnl: " + nl_geterror(nle) + ")", err);
}

// One request's progress, shared with the callbacks.
struct Exchange {
  std::function<void(nlmsghdr*)> on_reply;
  int error = 0;            // the kernel's errno
  std::string kernel_says;  // its extended-ACK text, if any
  bool done = false;
};

int on_valid(nl_msg* msg, void* arg) {
  auto* x = static_cast<Exchange*>(arg);
  if (x->on_reply) x->on_reply(nlmsg_hdr(msg));
  return NL_OK;
}

int on_end(nl_msg*, void* arg) {
  static_cast<Exchange*>(arg)->done = true;
  return NL_STOP;
}

// The kernel's extended-ACK message after the nlmsgerr (and the echoed request unless capped).
std::string extack_message(const nlmsgerr* e) {
  const auto* h =
      reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(e) - NLMSG_HDRLEN);
  if (!(h->nlmsg_flags & NLM_F_ACK_TLVS) || h->nlmsg_len < NLMSG_HDRLEN + sizeof(nlmsgerr))
    return {};
  std::string_view payload(reinterpret_cast<const char*>(e), h->nlmsg_len - NLMSG_HDRLEN);
  size_t skip = sizeof(nlmsgerr);
  if (!(h->nlmsg_flags & NLM_F_CAPPED)) skip += e->msg.nlmsg_len - NLMSG_HDRLEN;
  skip = NLMSG_ALIGN(skip);
  if (skip >= payload.size()) return {};
  for (const NetlinkAttr& a : parse_attrs(payload.substr(skip)))
    if (a.type == NLMSGERR_ATTR_MSG) return a.as_string();
  return {};
}

int on_error(sockaddr_nl*, nlmsgerr* e, void* arg) {
  auto* x = static_cast<Exchange*>(arg);
  x->error = -e->error;
  x->kernel_says = extack_message(e);
  x->done = true;
  return NL_STOP;
}

// Sends `msg` (libnl adds NLM_F_REQUEST and NLM_F_ACK) and reads until its ACK, error or the
// end of a dump; `on_reply` sees every data message.
Result<void> transact(nl_sock* sk, nl_msg* msg, const std::string& what,
                      std::function<void(nlmsghdr*)> on_reply = {}) {
  Cb cb(nl_cb_alloc(NL_CB_DEFAULT));
  if (!cb) return make_error(what, ENOMEM);
  Exchange x{std::move(on_reply)};
  nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_valid, &x);
  nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, on_end, &x);
  nl_cb_set(cb.get(), NL_CB_FINISH, NL_CB_CUSTOM, on_end, &x);
  nl_cb_err(cb.get(), NL_CB_CUSTOM, on_error, &x);
  if (int sent = nl_send_auto(sk, msg); sent < 0) return nl_error(what + ": sending", sent);
  while (!x.done) {
    int r = nl_recvmsgs(sk, cb.get());
    if (x.error)
      return make_error(x.kernel_says.empty() ? what : what + " (kernel: " + x.kernel_says + ")",
                        x.error);
    if (r < 0) return nl_error(what, r);
  }
  return ok();
}

Result<Msg> request(int op, int flags, const std::string& what) {
  Msg m(nlmsg_alloc_simple(nldev(op), flags));
  if (!m) return make_error(what, ENOMEM);
  return m;
}

std::string trimmed(const std::string& path) {
  auto text = read_file(path);
  if (!text) return "";
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

// "4: ACTIVE" -> "ACTIVE".
std::string after_colon(const std::string& s) {
  auto colon = s.find(": ");
  return colon == std::string::npos ? s : s.substr(colon + 2);
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') out.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, uint64_t> read_counters(const std::string& dir) {
  std::map<std::string, uint64_t> out;
  for (const std::string& name : entries(dir)) {
    if (name == "lifespan") continue;  // hw_counters' refresh interval (ms), not a count
    // Some drivers list counters they cannot read (EINVAL): skip them.
    std::string v = trimmed(dir + "/" + name);
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) continue;
    out[name] = std::strtoull(v.c_str(), nullptr, 10);
  }
  return out;
}

}  // namespace

void RdmaNetlink::Free::operator()(nl_sock* s) const {
  nl_socket_free(s);  // closes the fd too
}

Result<RdmaNetlink> RdmaNetlink::open(std::chrono::milliseconds timeout) {
  std::unique_ptr<nl_sock, Free> sk(nl_socket_alloc());
  if (!sk) return make_error("allocating a netlink socket", ENOMEM);
  if (int r = nl_connect(sk.get(), NETLINK_RDMA); r < 0)
    return nl_error("opening an RDMA netlink socket", r);
  const int fd = nl_socket_get_fd(sk.get());
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
    return errno_error("setting the RDMA netlink receive timeout");
  // The kernel's own explanation of a refusal, where it gives one; best effort.
  int one = 1;
  ::setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
  ::setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
  return RdmaNetlink(std::move(sk));
}

Result<void> RdmaNetlink::add_rxe(const std::string& name, const std::string& netdev) {
  const std::string what = "creating rxe device " + name + " on " + netdev;
  auto m = request(RDMA_NLDEV_CMD_NEWLINK, 0, what);
  if (!m) return m.error();
  if (nla_put_string(m->get(), RDMA_NLDEV_ATTR_DEV_NAME, name.c_str()) < 0 ||
      nla_put_string(m->get(), RDMA_NLDEV_ATTR_LINK_TYPE, "rxe") < 0 ||
      nla_put_string(m->get(), RDMA_NLDEV_ATTR_NDEV_NAME, netdev.c_str()) < 0)
    return make_error(what + ": request too long", EMSGSIZE);
  return transact(sk_.get(), m->get(), what);
}

Result<std::vector<RdmaDevice>> RdmaNetlink::devices() {
  // NLDEV_CMD_GET answers by index only: names come from a dump.
  const std::string what = "listing RDMA devices";
  auto m = request(RDMA_NLDEV_CMD_GET, NLM_F_DUMP, what);
  if (!m) return m.error();
  std::vector<RdmaDevice> out;
  FABEMU_TRY(transact(sk_.get(), m->get(), what, [&](nlmsghdr* h) {
    nlattr* tb[RDMA_NLDEV_ATTR_MAX] = {};
    if (nlmsg_parse(h, 0, tb, RDMA_NLDEV_ATTR_MAX - 1, nullptr) < 0) return;
    if (tb[RDMA_NLDEV_ATTR_DEV_INDEX] && tb[RDMA_NLDEV_ATTR_DEV_NAME])
      out.push_back({nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]),
                     nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME])});
  }));
  return out;
}

Result<std::optional<uint32_t>> RdmaNetlink::find(const std::string& name) {
  auto all = devices();
  if (!all) return all.error();
  for (const RdmaDevice& d : *all)
    if (d.name == name) return std::optional<uint32_t>(d.index);
  return std::optional<uint32_t>();
}

Result<void> RdmaNetlink::remove(uint32_t index, const std::string& name) {
  const std::string what = "deleting RDMA device " + name;
  auto m = request(RDMA_NLDEV_CMD_DELLINK, 0, what);
  if (!m) return m.error();
  if (nla_put_u32(m->get(), RDMA_NLDEV_ATTR_DEV_INDEX, index) < 0)
    return make_error(what + ": request too long", EMSGSIZE);
  return transact(sk_.get(), m->get(), what);
}

Result<void> RdmaNetlink::remove_if_present(const std::string& name) {
  auto index = find(name);
  if (!index) return index.error();
  if (!*index) return ok();
  auto r = remove(**index, name);
  if (r) return ok();
  // Gone in the meantime (its netdev went, or another `down`): what we wanted.
  if (auto again = find(name); again && !*again) return ok();
  return r;
}

Result<RxeLink> RxeLink::create(const std::string& netns_path, const std::string& name,
                                const std::string& netdev) {
  FABEMU_TRY(run_in_netns(netns_path, [&]() -> Result<void> {
    auto rdma = RdmaNetlink::open();
    if (!rdma) return rdma.error();
    return rdma->add_rxe(name, netdev);
  }));
  return RxeLink(name);
}

RxeLink::~RxeLink() {
  if (name_.empty()) return;
  auto rdma = RdmaNetlink::open();
  auto gone = rdma ? rdma->remove_if_present(name_) : Result<void>(rdma.error());
  if (!gone) report_cleanup_failure(describe(gone.error()));
}

RdmaDeviceState read_rdma_device(const std::string& name, const std::string& sysfs_class) {
  RdmaDeviceState s;
  s.name = name;
  const std::string dev = sysfs_class + "/" + name;
  s.present = path_exists(dev);
  if (!s.present) return s;
  const std::string port = dev + "/ports/1";
  s.state = after_colon(trimmed(port + "/state"));
  s.phys_state = after_colon(trimmed(port + "/phys_state"));
  s.gid1 = trimmed(port + "/gids/1");
  s.gid1_type = trimmed(port + "/gid_attrs/types/1");
  s.netdev = trimmed(port + "/gid_attrs/ndevs/1");
  if (s.netdev.empty()) s.netdev = trimmed(port + "/gid_attrs/ndevs/0");
  s.hw_counters = read_counters(port + "/hw_counters");
  s.counters = read_counters(port + "/counters");
  return s;
}

std::vector<std::string> rdma_devices_named(const std::string& prefix,
                                            const std::string& sysfs_class) {
  std::vector<std::string> out;
  for (const std::string& name : entries(sysfs_class))
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  return out;
}

}  // namespace fabemu
