// Whether a lab's hosts can use soft-RoCE on this kernel: decided cheaply, probed once per boot.
#pragma once

#include <optional>
#include <string>

namespace fabemu::doctor {

struct RxeSupport {
  bool usable = false;
  bool decided = true;  // false: the probe could not tell (tools missing, too slow a machine)
  std::string reason;   // why not ("this kernel has no rdma_rxe: ..."), or what showed it works
};

// A kernel without RDMA netlink says no at once. Otherwise the traffic probe
// (probe_rxe_traffic: two throwaway namespaces, ~1 s) runs once per boot and its verdict is
// kept at `cache_path`, keyed by the boot id and whether rdma_rxe is loaded (a later modprobe
// asks again). Needs root; concurrent callers may both probe, which is harmless.
// `fresh` (the doctor) probes again and rewrites the verdict.
RxeSupport rxe_support(const std::string& cache_path, bool fresh = false);

// The verdict cached for this boot, if any (no probing, no root needed).
std::optional<RxeSupport> cached_rxe_support(const std::string& cache_path);

}  // namespace fabemu::doctor
