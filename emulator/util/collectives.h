// The collectives fabemu knows, in one table: their names (as scenario files, the benchmark's
// options and reports spell them) and nccl-tests' bus-bandwidth factors. The scenario loader,
// the link model's prediction and the benchmark all read them from here.
#pragma once

#include <string_view>
#include <vector>

#include "util/result.h"

namespace fabemu {

enum class Collective { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast };

inline constexpr Collective kAllCollectives[] = {Collective::AllReduce, Collective::AllGather,
                                                 Collective::ReduceScatter, Collective::AllToAll,
                                                 Collective::Broadcast};

// "allreduce", "allgather", "reducescatter", "alltoall", "broadcast".
std::string_view name_of(Collective c);
// "allreduce, allgather, reducescatter, alltoall, broadcast": for error messages.
std::string_view collective_names();
Result<Collective> parse_collective(std::string_view name);
// A comma list ("allreduce,alltoall"), in the given order, without repeats.
Result<std::vector<Collective>> parse_collective_list(std::string_view text);

// busbw = algbw * factor (nccl-tests' PERFORMANCE.md): allreduce 2(n-1)/n; allgather,
// reducescatter, alltoall (n-1)/n; broadcast 1. What each rank's busiest link must carry
// relative to the size, so that it compares across rank counts.
double bus_factor(Collective c, int ranks);

// The collectives whose buffers split into independent parts, one per connection of several
// per peer (a collective step's qps_per_peer, fabemu-collective's --qps-per-peer): allreduce
// and broadcast (contiguous slices), alltoall (each peer's block in slices). Gloo's allgather
// ring and reduce-scatter take whole blocks.
bool splits_across_qps(Collective c);
inline constexpr int kMaxQpsPerPeer = 16;

}  // namespace fabemu
