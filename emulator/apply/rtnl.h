// RtnlSocket: an rtnetlink socket (libnl) bound to the network namespace it was opened in.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/addressing.h"
#include "util/result.h"

struct nl_sock;

namespace fabemu {

class RtnlSocket {
 public:
  // Opens a socket in the calling thread's current network namespace.
  static Result<RtnlSocket> open();

  Result<void> set_up(int ifindex, const std::string& what);
  Result<void> add_address(int ifindex, Prefix addr, const std::string& what);
  // A permanent ARP entry (not counted against the kernel's gc thresholds).
  Result<void> add_neighbour(int ifindex, Ipv4 addr, const std::array<uint8_t, 6>& mac,
                             const std::string& what);
  struct Hop {
    Ipv4 gateway;
    int ifindex;
  };
  // `rto_min_ms`: TCP's minimum retransmission timeout over this route (locked).
  Result<void> add_route(Prefix dst, const std::vector<Hop>& hops, std::optional<Ipv4> src,
                         const std::string& what, std::optional<uint32_t> rto_min_ms = {});
  // The same, replacing a route to dst that exists (a fabric rerouting around a failure).
  Result<void> replace_route(Prefix dst, const std::vector<Hop>& hops, std::optional<Ipv4> src,
                             const std::string& what);
  // Deletes the main table's route to dst; a route that is not there counts as deleted.
  Result<void> delete_route(Prefix dst, const std::string& what);
  // The main table's IPv4 unicast routes with gateways (connected and local ones left out):
  // destination and next hops' gateways (sorted).
  struct KernelRoute {
    Prefix dst;
    std::vector<Ipv4> gateways;
  };
  Result<std::vector<KernelRoute>> gateway_routes();
  // A policy rule (priority `prio`) that drops what goes from `src` to `dst`: a partition cut
  // at a switch. Deleting one that is not there counts as deleted.
  Result<void> blackhole_rule(Prefix src, Prefix dst, uint32_t prio, bool add);

 private:
  struct Free {
    void operator()(nl_sock* s) const;
  };
  explicit RtnlSocket(std::unique_ptr<nl_sock, Free> s) : sock_(std::move(s)) {}
  Result<void> put_route(Prefix dst, const std::vector<Hop>& hops, std::optional<Ipv4> src,
                         int flags, const std::string& what,
                         std::optional<uint32_t> rto_min_ms = {});
  std::unique_ptr<nl_sock, Free> sock_;
};

// libnl's negative NLE_* code as an Error with the nearest errno.
Error nl_error(int nl_err, const std::string& what);

}  // namespace fabemu
