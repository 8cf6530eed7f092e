// Dispatch of plan actions to backend calls.
#include "apply/backend.h"

namespace fabemu {

Result<void> Backend::apply(const Action& action) {
  return std::visit(
      [this](const auto& a) -> Result<void> {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, CreateNamespace>)
          return create_namespace(a);
        else if constexpr (std::is_same_v<T, SetSysctl>)
          return set_sysctl(a);
        else if constexpr (std::is_same_v<T, SetLinkUp>)
          return set_link_up(a);
        else if constexpr (std::is_same_v<T, CreateVeth>)
          return create_veth(a);
        else if constexpr (std::is_same_v<T, CreateVxlan>)
          return create_vxlan(a);
        else if constexpr (std::is_same_v<T, AddAddress>)
          return add_address(a);
        else if constexpr (std::is_same_v<T, AddRoute>)
          return add_route(a);
        else if constexpr (std::is_same_v<T, AddNeighbour>)
          return add_neighbour(a);
        else if constexpr (std::is_same_v<T, MakeDir>)
          return make_dir(a);
        else if constexpr (std::is_same_v<T, MakeSymlink>)
          return make_symlink(a);
        else if constexpr (std::is_same_v<T, WriteFile>)
          return write_file(a);
        else if constexpr (std::is_same_v<T, CreateCgroup>)
          return create_cgroup(a);
        else if constexpr (std::is_same_v<T, LoadShaper>)
          return load_shaper(a);
        else if constexpr (std::is_same_v<T, CreateRxe>)
          return create_rxe(a);
        else if constexpr (std::is_same_v<T, DisableOffloads>)
          return disable_offloads(a);
        else if constexpr (std::is_same_v<T, StartOvs>)
          return start_ovs(a);
        else if constexpr (std::is_same_v<T, ConfigureOvs>)
          return configure_ovs(a);
        else if constexpr (std::is_same_v<T, StartRouter>)
          return start_router(a);
        else if constexpr (std::is_same_v<T, AwaitRoutes>)
          return await_routes(a);
        else if constexpr (std::is_same_v<T, BalanceSwitch>)
          return balance_switch(a);
        else
          return shape_port(a);
      },
      action);
}

Result<void> Backend::apply_parallel(std::span<const Action> actions) {
  for (const Action& a : actions) FABEMU_TRY(apply(a));
  return ok();
}

}  // namespace fabemu
