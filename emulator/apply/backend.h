// Backend: the narrow interface between the applier and the system (kernel or in-memory fake).
#pragma once

#include <span>
#include <vector>

#include "plan/plan.h"
#include "util/result.h"

namespace fabemu {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Result<void> create_namespace(const CreateNamespace& a) = 0;
  virtual Result<void> set_sysctl(const SetSysctl& a) = 0;
  virtual Result<void> set_link_up(const SetLinkUp& a) = 0;
  virtual Result<void> create_veth(const CreateVeth& a) = 0;
  virtual Result<void> create_vxlan(const CreateVxlan& a) = 0;
  virtual Result<void> add_address(const AddAddress& a) = 0;
  virtual Result<void> add_route(const AddRoute& a) = 0;
  virtual Result<void> add_neighbour(const AddNeighbour& a) = 0;
  virtual Result<void> make_dir(const MakeDir& a) = 0;
  virtual Result<void> make_symlink(const MakeSymlink& a) = 0;  // may complete in finish()
  virtual Result<void> write_file(const WriteFile& a) = 0;
  virtual Result<void> create_cgroup(const CreateCgroup& a) = 0;
  virtual Result<void> load_shaper(const LoadShaper& a) = 0;
  virtual Result<void> shape_port(const ShapePort& a) = 0;
  virtual Result<void> create_rxe(const CreateRxe& a) = 0;
  virtual Result<void> disable_offloads(const DisableOffloads& a) = 0;
  virtual Result<void> start_ovs(const StartOvs& a) = 0;
  virtual Result<void> configure_ovs(const ConfigureOvs& a) = 0;
  virtual Result<void> start_router(const StartRouter& a) = 0;
  virtual Result<void> await_routes(const AwaitRoutes& a) = 0;
  virtual Result<void> balance_switch(const BalanceSwitch& a) = 0;
  // Completes any batched work and returns the calling thread to its own namespaces.
  virtual Result<void> finish() = 0;

  // Makes the (new, empty) run dir of a lab a tmpfs of its own, before the journal goes in.
  // remove(Mount) detaches it with everything inside, pins included, in one go.
  virtual Result<void> mount_run_dir(const std::string& dir) = 0;

  // Teardown, driven by the journal: stop every process inside the lab's namespaces, then
  // remove one entry. Both succeed when the object is already gone.
  virtual Result<void> kill_processes(const std::vector<JournalEntry>& journal) = 0;
  virtual Result<void> remove(const JournalEntry& e) = 0;

  Result<void> apply(const Action& action);
  // A ParallelRange of a plan. This one applies it in order; a backend may use threads.
  virtual Result<void> apply_parallel(std::span<const Action> actions);
  // Called once before a plan's first action: a backend may start work that needs no action
  // before it (loading the link model) and finish it when its action comes.
  virtual void start(const Plan& /*plan*/) {}
};

}  // namespace fabemu
