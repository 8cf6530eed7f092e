// Raw netlink requests: building messages, reading ACKs and extended ACKs.
#include "util/netlink.h"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fabemu {

NetlinkMessage::NetlinkMessage(uint16_t type, uint16_t flags) {
  nlmsghdr h{};
  h.nlmsg_type = type;
  h.nlmsg_flags = NLM_F_REQUEST | flags;
  append(&h, sizeof(h));
}

void NetlinkMessage::append(const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  buf_.insert(buf_.end(), p, p + len);
  buf_.resize(NLMSG_ALIGN(buf_.size()), 0);
}

void NetlinkMessage::put_attr(uint16_t type, const void* data, size_t len) {
  nlattr a{};
  a.nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
  a.nla_type = type;
  size_t start = buf_.size();
  buf_.resize(start + NLA_HDRLEN, 0);
  std::memcpy(buf_.data() + start, &a, sizeof(a));
  if (len) append(data, len);
}

void NetlinkMessage::put_string(uint16_t type, std::string_view s) {
  std::string z(s);
  put_attr(type, z.c_str(), z.size() + 1);
}

size_t NetlinkMessage::begin_nest(uint16_t type) {
  size_t offset = buf_.size();
  put_attr(type | NLA_F_NESTED, nullptr, 0);
  return offset;
}

void NetlinkMessage::end_nest(size_t offset) {
  nlattr a;
  std::memcpy(&a, buf_.data() + offset, sizeof(a));
  a.nla_len = static_cast<uint16_t>(buf_.size() - offset);
  std::memcpy(buf_.data() + offset, &a, sizeof(a));
}

std::vector<char>& NetlinkMessage::finish(uint32_t seq) {
  nlmsghdr h;
  std::memcpy(&h, buf_.data(), sizeof(h));
  h.nlmsg_len = static_cast<uint32_t>(buf_.size());
  h.nlmsg_seq = seq;
  std::memcpy(buf_.data(), &h, sizeof(h));
  return buf_;
}

uint32_t NetlinkAttr::as_u32() const {
  uint32_t v = 0;
  std::memcpy(&v, payload.data(), std::min(payload.size(), sizeof(v)));
  return v;
}

std::string NetlinkAttr::as_string() const {
  return std::string(payload.substr(0, payload.find('\0')));
}

std::vector<NetlinkAttr> parse_attrs(std::string_view data) {
  std::vector<NetlinkAttr> attrs;
  while (data.size() >= NLA_HDRLEN) {
    nlattr a;
    std::memcpy(&a, data.data(), sizeof(a));
    if (a.nla_len < NLA_HDRLEN || a.nla_len > data.size()) break;
    attrs.push_back({static_cast<uint16_t>(a.nla_type & NLA_TYPE_MASK),
                     data.substr(NLA_HDRLEN, a.nla_len - NLA_HDRLEN)});
    data.remove_prefix(std::min<size_t>(NLA_ALIGN(a.nla_len), data.size()));
  }
  return attrs;
}

namespace {

std::string protocol_name(int protocol) {
  switch (protocol) {
    case NETLINK_ROUTE:
      return "an rtnetlink";
    case NETLINK_GENERIC:
      return "a generic netlink";
    case NETLINK_RDMA:
      return "an RDMA netlink";
  }
  return "a netlink (protocol " + std::to_string(protocol) + ")";
}

}  // namespace

Result<NetlinkSocket> NetlinkSocket::open(int protocol, std::chrono::milliseconds timeout) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol));
  if (!fd.valid()) return errno_error("opening " + protocol_name(protocol) + " socket");
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
    return errno_error("setting netlink receive timeout");
  // Extended ACKs carry the kernel's own explanation ("Specified qdisc kind is unknown"), which
  // is worth more to a user than the bare errno. Capped ACKs keep the error message short.
  // Both are best effort: older kernels simply give the errno.
  int one = 1;
  ::setsockopt(fd.get(), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
  ::setsockopt(fd.get(), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
  return NetlinkSocket(std::move(fd));
}

namespace {

// The kernel's extended-ACK message, if the error carries one.
std::string extack_message(const nlmsghdr& h, std::string_view payload) {
  if (!(h.nlmsg_flags & NLM_F_ACK_TLVS)) return {};
  size_t skip = sizeof(nlmsgerr);
  if (!(h.nlmsg_flags & NLM_F_CAPPED)) {
    nlmsgerr err;
    std::memcpy(&err, payload.data(), sizeof(err));
    skip += err.msg.nlmsg_len - sizeof(nlmsghdr);
  }
  skip = NLMSG_ALIGN(skip);
  if (skip >= payload.size()) return {};
  for (const NetlinkAttr& a : parse_attrs(payload.substr(skip)))
    if (a.type == NLMSGERR_ATTR_MSG) return a.as_string();
  return {};
}

}  // namespace

Result<std::vector<std::string>> NetlinkSocket::transact(NetlinkMessage& msg,
                                                         const std::string& what) {
  uint32_t seq = seq_++;
  std::vector<char>& out = msg.finish(seq);
  nlmsghdr sent;
  std::memcpy(&sent, out.data(), sizeof(sent));
  bool dump = (sent.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
  if (!dump) {
    sent.nlmsg_flags |= NLM_F_ACK;
    std::memcpy(out.data(), &sent, sizeof(sent));
  }
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd_.get(), out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) < 0)
    return errno_error(what + " (sending request)");

  std::vector<std::string> replies;
  // Dumps arrive in chunks of at most a few pages; 64 KiB holds any of them.
  std::vector<char> buf(64 * 1024);
  for (;;) {
    ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return make_error(what + " (no answer from the kernel: timed out)", ETIMEDOUT);
      return errno_error(what + " (reading reply)");
    }
    std::string_view data(buf.data(), static_cast<size_t>(n));
    while (data.size() >= sizeof(nlmsghdr)) {
      nlmsghdr h;
      std::memcpy(&h, data.data(), sizeof(h));
      if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > data.size()) break;
      std::string_view payload = data.substr(NLMSG_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN);
      data.remove_prefix(std::min<size_t>(NLMSG_ALIGN(h.nlmsg_len), data.size()));
      if (h.nlmsg_seq != seq) continue;  // a stale answer to an earlier, timed-out request
      if (h.nlmsg_type == NLMSG_DONE) {
        // A dump that failed half-way reports its errno in the DONE message.
        int status = 0;
        if (payload.size() >= sizeof(status)) std::memcpy(&status, payload.data(), sizeof(status));
        if (status < 0) return make_error(what, -status);
        return replies;
      }
      if (h.nlmsg_type == NLMSG_ERROR) {
        if (payload.size() < sizeof(nlmsgerr)) return make_error(what + " (short error)", EPROTO);
        nlmsgerr err;
        std::memcpy(&err, payload.data(), sizeof(err));
        if (err.error == 0) return replies;
        std::string kernel_says = extack_message(h, payload);
        return make_error(kernel_says.empty() ? what : what + " (kernel: " + kernel_says + ")",
                          -err.error);
      }
      replies.emplace_back(payload);
    }
  }
}

std::string describe(const Error& error) {
  if (!error.code) return error.message;
  const char* name = ::strerrorname_np(error.code.value());
  std::string prefix = name ? name : "errno " + std::to_string(error.code.value());
  return prefix + " " + error.message;
}

}  // namespace fabemu
