// Soft-RoCE (rxe) devices through RDMA netlink (libnl): create, find and delete them, as
// `rdma link add/delete` does, and read a device's state and counters from sysfs.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

struct nl_sock;

namespace fabemu {

struct RdmaDevice {
  uint32_t index = 0;
  std::string name;
};

// An RDMA netlink socket in the calling thread's network namespace: rxe looks its netdev up
// there, and opens its UDP socket there (kernels >= 7.1; older ones only in the initial one).
class RdmaNetlink {
 public:
  // Fails with EPROTONOSUPPORT on a kernel without the RDMA subsystem. Every reply is
  // awaited at most `timeout`.
  static Result<RdmaNetlink> open(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // `rdma link add NAME type rxe netdev NETDEV`. EINVAL when the kernel has no rdma_rxe
  // (nor a module to load), EEXIST when the netdev has an rxe device already.
  Result<void> add_rxe(const std::string& name, const std::string& netdev);

  // Every RDMA device this namespace sees (all of them in the default "shared" netns mode).
  Result<std::vector<RdmaDevice>> devices();
  Result<std::optional<uint32_t>> find(const std::string& name);

  // `rdma link delete`: by index, and by name, where a device that is not there is success.
  Result<void> remove(uint32_t index, const std::string& name);
  Result<void> remove_if_present(const std::string& name);

 private:
  struct Free {
    void operator()(nl_sock* s) const;
  };
  explicit RdmaNetlink(std::unique_ptr<nl_sock, Free> sk) : sk_(std::move(sk)) {}
  std::unique_ptr<nl_sock, Free> sk_;
};

// An rxe device made for a while (probes): deleted again when the handle goes.
class RxeLink {
 public:
  // Creates it inside the network namespace pinned at `netns_path`, on `netdev` there.
  static Result<RxeLink> create(const std::string& netns_path, const std::string& name,
                                const std::string& netdev);
  RxeLink(RxeLink&& other) noexcept : name_(std::move(other.name_)) { other.name_.clear(); }
  RxeLink& operator=(RxeLink&&) = delete;
  ~RxeLink();
  const std::string& name() const { return name_; }

 private:
  explicit RxeLink(std::string name) : name_(std::move(name)) {}
  std::string name_;  // empty: moved from
};

inline constexpr const char* kInfinibandClass = "/sys/class/infiniband";

// What sysfs says about an RDMA device's port 1.
struct RdmaDeviceState {
  std::string name;
  bool present = false;
  std::string state;       // "ACTIVE", "DOWN", ...
  std::string phys_state;  // "LINK_UP", ...
  std::string netdev;      // the netdev under GID index 1 (or 0)
  std::string gid1;        // GID index 1: RoCEv2 with the netdev's IPv4 address
  std::string gid1_type;   // "RoCE v2"
  // ports/1/hw_counters/* (rxe: sent_pkts, rcvd_pkts, retry_exceeded_err, ...) and
  // ports/1/counters/* where the driver has them, by file name.
  std::map<std::string, uint64_t> hw_counters, counters;
};

RdmaDeviceState read_rdma_device(const std::string& name,
                                 const std::string& sysfs_class = kInfinibandClass);

// The RDMA devices in sysfs whose name starts with `prefix`, sorted.
std::vector<std::string> rdma_devices_named(const std::string& prefix,
                                            const std::string& sysfs_class = kInfinibandClass);

}  // namespace fabemu
