// Collective names, buffer layouts and bus-bandwidth factors.
#include "collective/collective.h"

#include <algorithm>

namespace fabemu::collective {

std::string_view name_of(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "allreduce";
    case Collective::AllGather:
      return "allgather";
    case Collective::ReduceScatter:
      return "reducescatter";
    case Collective::AllToAll:
      return "alltoall";
    case Collective::Broadcast:
      return "broadcast";
  }
  return "?";
}

Result<Collective> parse_collective(std::string_view name) {
  for (Collective c : kAllCollectives) {
    if (name == name_of(c)) return c;
  }
  return make_error("unknown collective '" + std::string(name) +
                    "'; valid: allreduce, allgather, reducescatter, alltoall, broadcast");
}

Result<std::vector<Collective>> parse_collective_list(std::string_view text) {
  std::vector<Collective> out;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma - start);
    auto c = parse_collective(item);
    if (!c) return c.error();
    if (std::find(out.begin(), out.end(), *c) == out.end()) out.push_back(*c);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

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

double bus_factor(Collective c, int ranks) {
  const double n = std::max(ranks, 1);
  switch (c) {
    case Collective::AllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      return (n - 1) / n;
    case Collective::Broadcast:
      return 1.0;
  }
  return 1.0;
}

}  // namespace fabemu::collective
