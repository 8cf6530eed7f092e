// A minimal raw netlink client: rtnetlink and genetlink requests with bounded waits and
// extended-ACK errors. Used where libnl has no API (doctor probes, veths with fixed ifindexes
// and GSO limits, the fq qdisc's options); RDMA netlink goes through libnl (apply/rdma.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"
#include "util/unique_fd.h"

namespace fabemu {

// One netlink request: header, optional family header, then attributes (nests allowed).
class NetlinkMessage {
 public:
  NetlinkMessage(uint16_t type, uint16_t flags);

  // Appends a fixed family header (ifinfomsg, tcmsg, genlmsghdr, ...), padded to 4 bytes.
  template <typename T>
  void put_header(const T& header) {
    append(&header, sizeof(header));
  }
  void put_attr(uint16_t type, const void* data, size_t len);
  void put_u8(uint16_t type, uint8_t v) { put_attr(type, &v, sizeof(v)); }
  void put_u32(uint16_t type, uint32_t v) { put_attr(type, &v, sizeof(v)); }
  // NUL-terminated, as the kernel's NLA_NUL_STRING and NLA_STRING policies both accept.
  void put_string(uint16_t type, std::string_view s);

  // Nests: the returned offset is passed back to end_nest, which fixes the nest's length.
  size_t begin_nest(uint16_t type);
  void end_nest(size_t offset);

  // The finished bytes, with the length and sequence number filled in.
  std::vector<char>& finish(uint32_t seq);

 private:
  void append(const void* data, size_t len);
  std::vector<char> buf_;
};

// One netlink attribute seen in a reply.
struct NetlinkAttr {
  uint16_t type;  // without NLA_F_NESTED / NLA_F_NET_BYTEORDER
  std::string_view payload;

  uint32_t as_u32() const;
  std::string as_string() const;  // up to the first NUL
};

// Splits an attribute stream into its attributes; stops at the first malformed one.
std::vector<NetlinkAttr> parse_attrs(std::string_view data);

// A netlink socket whose every receive is bounded by a timeout, so a probe cannot hang.
class NetlinkSocket {
 public:
  static Result<NetlinkSocket> open(int protocol, std::chrono::milliseconds timeout);

  // Sends `msg` (NLM_F_ACK is added unless it is a dump) and collects the payloads (everything
  // after the nlmsghdr) of the reply messages until the ACK or NLMSG_DONE. A kernel error
  // becomes an Error with its errno and, when the kernel gave one, its extended-ACK text:
  // "creating qdisc fq (kernel: Specified qdisc kind is unknown)".
  Result<std::vector<std::string>> transact(NetlinkMessage& msg, const std::string& what);

 private:
  explicit NetlinkSocket(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
  uint32_t seq_ = 1;
};

// "ENOENT creating qdisc fq (kernel: ...)": the errno's name first, since that is what users
// search for; messages without an errno are returned as they are.
std::string describe(const Error& error);

}  // namespace fabemu
