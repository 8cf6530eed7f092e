// FakeBackend: an in-memory kernel that checks what a real one would refuse, for unit tests.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "apply/backend.h"

namespace fabemu {

class FakeBackend : public Backend {
 public:
  struct Iface {
    bool up = false;
    std::string peer_ns, peer_if;
    std::vector<Prefix> addrs;
    uint32_t ifindex = 0;
    uint32_t gso_max_segs = 0;
    std::optional<ShapePort> shaped;  // the link model on this port
    std::optional<Mac> mac;           // fixed at creation; unset: random
    bool offloads_off = false;
    std::optional<CreateVxlan> vxlan;  // a tunnel end to another machine (peer set by merging)
  };
  struct Ns {
    std::map<std::string, Iface> ifaces;
    std::map<std::string, std::string> sysctls;
    std::vector<AddRoute> routes;
    std::string hostname;
  };

  std::map<std::string, Ns> namespaces;  // by namespace name
  std::set<std::string> files, dirs, cgroups, mounts;
  std::map<std::string, std::string> pins;                  // netns pin path -> namespace name
  std::set<std::string> bpf_pins;                           // link-model pin dirs
  std::map<std::string, CreateRxe> rxe;                     // RDMA devices by (global) name
  std::set<std::string> ovs_running;                        // namespaces with the lab's OVS daemons
  std::map<std::string, std::vector<std::string>> routers;  // namespace -> FRR daemons
  std::map<std::string, std::vector<OvsBridge>> ovs_bridges;  // by namespace
  std::vector<std::string> calls;                             // describe() of every call, in order
  int fail_at = -1;  // make the Nth call (0-based) fail, to test rollback

  Result<void> create_namespace(const CreateNamespace& a) override;
  Result<void> set_sysctl(const SetSysctl& a) override;
  Result<void> set_link_up(const SetLinkUp& a) override;
  Result<void> create_veth(const CreateVeth& a) override;
  Result<void> create_vxlan(const CreateVxlan& a) override;
  Result<void> add_address(const AddAddress& a) override;
  Result<void> add_neighbour(const AddNeighbour& a) override;
  Result<void> add_route(const AddRoute& a) override;
  Result<void> make_dir(const MakeDir& a) override;
  Result<void> make_symlink(const MakeSymlink& a) override;
  Result<void> write_file(const WriteFile& a) override;
  Result<void> create_cgroup(const CreateCgroup& a) override;
  Result<void> load_shaper(const LoadShaper& a) override;
  Result<void> shape_port(const ShapePort& a) override;
  Result<void> create_rxe(const CreateRxe& a) override;
  Result<void> disable_offloads(const DisableOffloads& a) override;
  Result<void> start_ovs(const StartOvs& a) override;
  Result<void> configure_ovs(const ConfigureOvs& a) override;
  Result<void> start_router(const StartRouter& a) override;
  Result<void> await_routes(const AwaitRoutes& a) override;
  Result<void> balance_switch(const BalanceSwitch& a) override;
  Result<void> finish() override { return ok(); }
  Result<void> mount_run_dir(const std::string& dir) override;
  Result<void> kill_processes(const std::vector<JournalEntry>&) override { return ok(); }
  Result<void> remove(const JournalEntry& e) override;

  // Where a packet from `ns` to `dst` leaves: follows connected and static routes the way
  // the kernel's FIB would (longest prefix), and OVS bridges' flows the way OpenFlow would
  // (checking the Ethernet destination each writes), across veths, up to `max_hops` nodes.
  // Returns the namespaces visited ("NS/BRIDGE" for a bridge), ending with the one that owns
  // dst; empty when unroutable.
  // The static route the FIB of `ns` would pick for dst (longest prefix), or nullptr.
  const AddRoute* route_for(const std::string& ns, Ipv4 dst) const;

  // The source address the kernel would give a packet from `ns` to dst: the route's preferred
  // source, else the first address of the interface it leaves through.
  std::optional<Ipv4> source_for(const std::string& ns, Ipv4 dst) const;

  std::vector<std::string> trace(const std::string& ns, Ipv4 dst, int max_hops = 16,
                                 size_t ecmp_choice = 0) const;

  // The machines of one lab as one fake kernel, each tunnel end joined to the end with its VNI
  // on the machine it points to (as the underlay would carry it). A namespace that several
  // machines have (the OVS one) is kept once per machine, as "NAME@mI".
  static FakeBackend join(const std::vector<FakeBackend>& machines);

 private:
  Result<void> step(const std::string& what);
  void unpin(const std::string& pin);
  Result<Ns*> find_ns(const std::string& name);
  int count_ = 0;
  std::string loaded_pin_dir_;                   // LoadShaper of this apply
  std::map<uint32_t, std::string> shaped_keys_;  // ifindex -> "ns/ifname" it shapes
};

}  // namespace fabemu
