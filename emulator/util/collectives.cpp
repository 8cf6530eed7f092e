// Collective names and bus-bandwidth factors.
#include "util/collectives.h"

#include <algorithm>
#include <string>

namespace fabemu {

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

std::string_view collective_names() {
  return "allreduce, allgather, reducescatter, alltoall, broadcast";
}

Result<Collective> parse_collective(std::string_view name) {
  for (Collective c : kAllCollectives)
    if (name == name_of(c)) return c;
  return make_error(
      "unknown collective '" + std::string(name) + "'; valid: " + std::string(collective_names()),
      EINVAL);
}

Result<std::vector<Collective>> parse_collective_list(std::string_view text) {
  std::vector<Collective> out;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    auto c = parse_collective(text.substr(start, comma - start));
    if (!c) return c.error();
    if (std::find(out.begin(), out.end(), *c) == out.end()) out.push_back(*c);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
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

bool splits_across_qps(Collective c) {
  return c == Collective::AllReduce || c == Collective::AllToAll || c == Collective::Broadcast;
}

}  // namespace fabemu
