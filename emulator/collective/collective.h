// How big the benchmark's buffers are for a requested size, collective by collective (the
// collectives themselves, names and bus factors, are util/collectives.h's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/collectives.h"
#include "util/result.h"

namespace fabemu::collective {

// The rank that broadcasts; the other collectives have none (nccl-tests prints -1).
constexpr int kBroadcastRoot = 0;
// Elements are float32; the sums of reductions stay exact (see pattern.h).
constexpr uint64_t kElementBytes = 4;

// One collective at one size on `ranks` ranks, as nccl-tests defines it: `size` is the
// largest buffer of a rank (allgather's output, reducescatter's input, alltoall's send
// buffer), `count` the elements nccl-tests prints (per-rank block for allgather,
// reducescatter and alltoall; the whole buffer for allreduce and broadcast). A requested
// size is rounded down to whole blocks, but never below one element per block.
struct Layout {
  Collective collective = Collective::AllReduce;
  int ranks = 1;
  uint64_t size = 0;       // bytes
  uint64_t count = 0;      // elements
  uint64_t in_count = 0;   // elements of this rank's input
  uint64_t out_count = 0;  // elements of this rank's output
  // The block one rank owns or sends to one peer (allgather, reducescatter, alltoall).
  uint64_t block = 0;
  bool reduces() const {
    return collective == Collective::AllReduce || collective == Collective::ReduceScatter;
  }
  int root() const { return collective == Collective::Broadcast ? kBroadcastRoot : -1; }
};

Layout layout_of(Collective c, uint64_t requested_bytes, int ranks);

// GB/s (10^9 bytes) for `bytes` moved in `seconds`.
inline double gb_per_s(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

}  // namespace fabemu::collective
