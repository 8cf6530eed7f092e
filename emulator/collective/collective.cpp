// Buffer layouts of each collective.
#include "collective/collective.h"

#include <algorithm>

namespace fabemu::collective {

Layout layout_of(Collective c, uint64_t requested_bytes, int ranks) {
  const uint64_t n = static_cast<uint64_t>(std::max(ranks, 1));
  const uint64_t elements = std::max<uint64_t>(requested_bytes / kElementBytes, 1);
  Layout l;
  l.collective = c;
  l.ranks = static_cast<int>(n);
  switch (c) {
    case Collective::AllReduce:
    case Collective::Broadcast:
      l.count = l.in_count = l.out_count = elements;
      l.size = elements * kElementBytes;
      break;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      l.block = std::max<uint64_t>(elements / n, 1);
      l.count = l.block;
      l.size = l.block * n * kElementBytes;
      l.in_count = c == Collective::AllGather ? l.block : l.block * n;
      l.out_count = c == Collective::ReduceScatter ? l.block : l.block * n;
      break;
  }
  return l;
}

}  // namespace fabemu::collective
