// KernelBackend: applies plan actions to the running kernel (libnl, namespaces, files, cgroups).
#pragma once

#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "apply/backend.h"
#include "apply/cgroup.h"
#include "apply/frr.h"
#include "apply/ovs.h"
#include "apply/rtnl.h"
#include "shaping/link_shaper.h"
#include "util/background_queue.h"
#include "util/netlink.h"
#include "util/unique_fd.h"

namespace fabemu {

// Works on the calling thread: it moves the thread between the lab's namespaces while it
// applies, and finish() (or the destructor) puts it back where it started. A parallel range
// is shared out by namespace to one worker backend per core, each on a thread of its own.
class KernelBackend : public Backend {
 public:
  static Result<std::unique_ptr<KernelBackend>> create(std::string netns_dir = "/run/netns");
  ~KernelBackend() override;

  Result<void> create_namespace(const CreateNamespace& a) override;
  Result<void> set_sysctl(const SetSysctl& a) override;
  Result<void> set_link_up(const SetLinkUp& a) override;
  Result<void> create_veth(const CreateVeth& a) override;
  Result<void> create_vxlan(const CreateVxlan& a) override;
  Result<void> add_address(const AddAddress& a) override;
  Result<void> add_route(const AddRoute& a) override;
  Result<void> add_neighbour(const AddNeighbour& a) override;
  Result<void> make_dir(const MakeDir& a) override;
  Result<void> make_symlink(const MakeSymlink& a) override;
  Result<void> write_file(const WriteFile& a) override;
  Result<void> create_cgroup(const CreateCgroup& a) override;
  Result<void> load_shaper(const LoadShaper& a) override;
  Result<void> shape_port(const ShapePort& a) override;
  Result<void> balance_switch(const BalanceSwitch& a) override;
  Result<void> create_rxe(const CreateRxe& a) override;
  Result<void> disable_offloads(const DisableOffloads& a) override;
  Result<void> start_ovs(const StartOvs& a) override;
  Result<void> configure_ovs(const ConfigureOvs& a) override;
  Result<void> start_router(const StartRouter& a) override;
  Result<void> await_routes(const AwaitRoutes& a) override;
  Result<void> finish() override;
  Result<void> apply_parallel(std::span<const Action> actions) override;
  void start(const Plan& plan) override;
  Result<void> mount_run_dir(const std::string& dir) override;
  Result<void> kill_processes(const std::vector<JournalEntry>& journal) override;
  Result<void> remove(const JournalEntry& e) override;

 private:
  KernelBackend() = default;
  Result<void> enter(const std::string& ns);             // join ns (this thread)
  Result<RtnlSocket*> socket_in(const std::string& ns);  // join ns, open its rtnl socket
  Result<NetlinkSocket*> raw_socket_in(const std::string& ns);
  Result<int> ifindex(const std::string& ns, const std::string& ifname);
  Result<int> ns_fd(const std::string& ns);
  Result<void> go_home();  // this thread back in the namespaces it was created in
  Result<std::string> sysctl_dir(const std::string& ns);  // ends in "/"

  std::string netns_dir_;
  UniqueFd home_net_, home_uts_;
  std::optional<NetlinkSocket> home_raw_;  // in the caller's namespace: creates the veths
  std::string cur_ns_;                     // "" = home
  std::optional<RtnlSocket> cur_sock_;
  std::optional<NetlinkSocket> cur_raw_;
  std::map<std::string, int> cur_ifindex_;
  std::map<std::string, UniqueFd> ns_fds_;
  const std::map<std::string, UniqueFd>* known_ns_ = nullptr;  // a worker's: its parent's
  std::optional<CgroupLayout> cgroups_;
  BackgroundQueue files_;                            // symlinks, made while the kernel works
  std::set<std::string> fresh_;                      // made here, no sysctl written yet
  std::map<std::string, std::string> fresh_values_;  // sysctl values of a new namespace
  std::optional<LinkShaper> shaper_;                 // loaded by LoadShaper
  std::future<Result<LinkShaper>> shaper_loading_;   // started by start(), taken by LoadShaper
  std::string run_dir_;                              // the lab's tmpfs (from start())
  std::string proc_dir_, proc_ns_;                   // our procfs instance; the last ns seen
  int proc_namespaces_ = 0;                          // namespaces written through it
  std::optional<OvsTools> ovs_;                      // found by StartOvs
  std::optional<FrrTools> frr_;                      // found by the first StartRouter
};

}  // namespace fabemu
