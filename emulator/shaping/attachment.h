// ShaperAttachment: the link-model program at the clsact egress hook of one port.
#pragma once

#include <cstdint>
#include <string>

#include "util/result.h"
#include "util/unique_fd.h"

namespace fabemu {

// How the program sits at a port's egress. tcx (kernels >= 6.6) is one bpf() call with no
// qdisc; clsact + a direct-action cls_bpf filter works everywhere else.
enum class AttachMethod { Auto, Tcx, Clsact };  // Auto: tcx where the kernel has it

// `prog_fd` at the ingress of port `ifname` (index `ifindex`) of the calling thread's network
// namespace, for as long as the port lives: tcx where the kernel has it, else a clsact filter.
// Nothing owns it but the port (the lab's namespaces go with their hooks); `where` names the
// namespace in errors.
Result<void> attach_ingress_here(int prog_fd, const std::string& ifname, uint32_t ifindex,
                                 const std::string& where);

// Owns the program's attachment to one port in some network namespace: a tcx attachment, or a
// cls_bpf filter (and the clsact qdisc, when it made it). Detaching enters that namespace on a
// thread of its own, as attaching did.
class ShaperAttachment {
 public:
  // Attaches `prog_fd` at the egress of `ifname` in the namespace at `netns_path` ("" = ours)
  // and records the port in the ports map (`ports_fd`). Refuses a port whose ifindex another
  // namespace's port already holds: the maps are keyed by ifindex.
  static Result<ShaperAttachment> create(int prog_fd, int ports_fd, const std::string& netns_path,
                                         const std::string& ifname,
                                         AttachMethod method = AttachMethod::Auto);
  // The same in the calling thread's network namespace, on the calling thread (a lab build
  // is already there, and a thread per port would be most of its cost). `where` names the
  // namespace in errors.
  static Result<ShaperAttachment> create_here(int prog_fd, int ports_fd, const std::string& ifname,
                                              const std::string& where,
                                              AttachMethod method = AttachMethod::Auto);

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
  AttachMethod method() const { return method_; }  // Tcx or Clsact

 private:
  ShaperAttachment() = default;

  std::string netns_path_, ifname_;
  uint32_t ifindex_ = 0;
  uint64_t netns_dev_ = 0, netns_ino_ = 0;
  bool created_hook_ = false;
  bool attached_ = false;
  AttachMethod method_ = AttachMethod::Clsact;
  UniqueFd ports_fd_;  // dups, so that detaching works after the LinkShaper is gone
  UniqueFd prog_fd_;   // tcx detaches by program
};

}  // namespace fabemu
