// A minimal raw netlink client for the doctor's probes: rtnetlink, genetlink and RDMA netlink.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace fabemu::doctor {

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

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

}  // namespace fabemu::doctor
