// ShaperAttachment: the link-model program at the clsact egress hook of one port.
#pragma once

#include <cstdint>
#include <string>

#include "util/result.h"
#include "util/unique_fd.h"

namespace fabemu {

// Owns a cls_bpf filter (and the clsact qdisc, when it made it) on a port in some network
// namespace. Detaching enters that namespace on a thread of its own, as attaching did.
class ShaperAttachment {
 public:
  // Attaches `prog_fd` at the egress of `ifname` in the namespace at `netns_path` ("" = ours)
  // and records the port in the ports map (`ports_fd`). Refuses a port whose ifindex another
  // namespace's port already holds: the maps are keyed by ifindex.
  static Result<ShaperAttachment> create(int prog_fd, int ports_fd, const std::string& netns_path,
                                         const std::string& ifname);

  ShaperAttachment(ShaperAttachment&& o) noexcept;
  ShaperAttachment& operator=(ShaperAttachment&& o) noexcept;
  ShaperAttachment(const ShaperAttachment&) = delete;
  ShaperAttachment& operator=(const ShaperAttachment&) = delete;
  ~ShaperAttachment();  // detaches; logs a failure, never throws

  // Removes the filter (and the clsact qdisc if we made it) and the port record. A port or
  // namespace that no longer exists counts as detached.
  Result<void> detach();
  // Leaves the filter in place when this object goes: a lab outlives the process that made it,
  // and deleting the lab's namespaces removes its hooks.
  void release() { attached_ = false; }

  uint32_t ifindex() const { return ifindex_; }
  const std::string& ifname() const { return ifname_; }
  const std::string& netns_path() const { return netns_path_; }
  bool attached() const { return attached_; }

 private:
  ShaperAttachment() = default;

  std::string netns_path_, ifname_;
  uint32_t ifindex_ = 0;
  uint64_t netns_dev_ = 0, netns_ino_ = 0;
  bool created_hook_ = false;
  bool attached_ = false;
  UniqueFd ports_fd_;  // a dup, so that detaching works after the LinkShaper is gone
};

}  // namespace fabemu
