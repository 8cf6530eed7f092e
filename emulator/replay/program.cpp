// What every reader's program has in common: groups, memory, descriptions and the checks.
#include "replay/program.h"

#include <algorithm>
#include <map>

#include "util/units.h"

namespace fabemu::replay {

std::string_view name_of(Pass p) {
  switch (p) {
    case Pass::Forward:
      return "forward";
    case Pass::InputGradient:
      return "input_gradient";
    case Pass::WeightGradient:
      return "weight_gradient";
    case Pass::Update:
      return "update";
    case Pass::Other:
      break;
  }
  return "other";
}

uint64_t Program::memory_bytes(int rank) const {
  std::map<int, uint64_t> largest;  // per stream
  for (const Op& op : ranks.at(rank))
    if (op.kind != OpKind::Compute)
      largest[stream_of(op)] = std::max(largest[stream_of(op)], op.bytes);
  uint64_t total = 0;
  // An input and an output of the size at most (allgather's input and reducescatter's output
  // are a block of it).
  for (const auto& [stream, bytes] : largest) total += 2 * bytes;
  return total;
}

std::string Program::describe() const {
  size_t ops = 0, collectives = 0, p2p = 0;
  for (const auto& r : ranks)
    for (const Op& op : r) {
      ++ops;
      collectives += op.kind == OpKind::Collective;
      p2p += op.kind == OpKind::Send;
    }
  const double per = ranks.empty() ? 0 : static_cast<double>(ops) / ranks.size();
  std::string s = format + ": " + std::to_string(world) + " ranks";
  if (format == "simai")
    s += " (tp " + std::to_string(tp) + ", dp " + std::to_string(dp) +
         (ep > 1 ? ", ep " + std::to_string(ep) : "") +
         (pp > 1 ? ", pp " + std::to_string(pp) : "") + "), " + std::to_string(layers) +
         (layers == 1 ? " layer" : " layers");
  s += ", " + printf_string("%.0f", per) + " operations per rank, " + std::to_string(collectives) +
       " collective calls";
  if (p2p) s += ", " + std::to_string(p2p) + (p2p == 1 ? " send" : " sends");
  return s + " in all";
}

namespace {

std::string rank_list(const std::vector<int>& r) {
  bool consecutive = r.size() > 2;
  for (size_t i = 1; i < r.size(); ++i) consecutive = consecutive && r[i] == r[i - 1] + 1;
  if (consecutive) return std::to_string(r.front()) + "-" + std::to_string(r.back());
  std::string s;
  for (int x : r) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

std::string describe_op(const Program& p, const Op& op) {
  switch (op.kind) {
    case OpKind::Compute:
      return "compute " + format_time_ns(op.compute_ns);
    case OpKind::Collective: {
      const Group& g = p.groups.at(op.group);
      return std::string(name_of(op.collective)) + " " + format_size(op.bytes) + " on " + g.kind +
             " [" + rank_list(g.ranks) + "]";
    }
    case OpKind::Send:
      return "send " + format_size(op.bytes) + " to " + std::to_string(op.peer);
    case OpKind::Recv:
      return "receive " + format_size(op.bytes) + " from " + std::to_string(op.peer);
  }
  return "?";
}

int add_group(Program& p, std::vector<int> ranks, const std::string& kind) {
  for (size_t g = 0; g < p.groups.size(); ++g) {
    if (p.groups[g].ranks != ranks) continue;
    // A pair that sends to each other and also has a collective is of the collective's kind.
    if (p.groups[g].kind == "p2p") p.groups[g].kind = kind;
    return static_cast<int>(g);
  }
  p.groups.push_back({std::move(ranks), kind});
  return static_cast<int>(p.groups.size()) - 1;
}

Result<void> validate(const Program& p) {
  if (p.world < 1 || static_cast<int>(p.ranks.size()) != p.world)
    return make_error("the program has " + std::to_string(p.ranks.size()) +
                      " ranks for a world of " + std::to_string(p.world));
  // Each group's collectives as each member issues them: the same sequence on all.
  std::map<int, std::map<int, std::vector<std::pair<Collective, uint64_t>>>> issued;
  std::map<std::pair<int, int>, std::vector<uint64_t>> sent, received;
  for (int r = 0; r < p.world; ++r) {
    const auto& ops = p.ranks[r];
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      const std::string where = "rank " + std::to_string(r) + " operation " + std::to_string(i) +
                                " (" + (op.layer.empty() ? "" : op.layer + ", ") +
                                describe_op(p, op) + ")";
      for (size_t d : op.deps)
        if (d >= i) return make_error(where + " waits for a later operation");
      if (op.kind == OpKind::Compute) continue;
      if (op.group < 0 || op.group >= static_cast<int>(p.groups.size()))
        return make_error(where + " has no group");
      const auto& members = p.groups[op.group].ranks;
      if (std::find(members.begin(), members.end(), r) == members.end())
        return make_error(where + " is on a group without rank " + std::to_string(r));
      if (op.bytes == 0) return make_error(where + " moves no bytes");
      if (op.kind == OpKind::Collective) issued[op.group][r].push_back({op.collective, op.bytes});
      if (op.kind == OpKind::Send) sent[{r, op.peer}].push_back(op.bytes);
      if (op.kind == OpKind::Recv) received[{op.peer, r}].push_back(op.bytes);
    }
  }
  for (const auto& [g, by_rank] : issued) {
    const auto& members = p.groups[g].ranks;
    const auto& first = by_rank.count(members[0]) ? by_rank.at(members[0])
                                                  : std::vector<std::pair<Collective, uint64_t>>{};
    for (int m : members) {
      const auto it = by_rank.find(m);
      if (it == by_rank.end() || it->second != first)
        return make_error("ranks " + std::to_string(members[0]) + " and " + std::to_string(m) +
                          " issue different collectives on group " + p.groups[g].kind + " [" +
                          rank_list(members) + "] (a replay would wait forever)");
    }
  }
  if (sent != received) {
    for (const auto& [pair, bytes] : sent)
      if (received[pair] != bytes)
        return make_error("rank " + std::to_string(pair.first) + "'s sends to rank " +
                          std::to_string(pair.second) + " do not match its receives");
    return make_error("a receive has no matching send");
  }
  return ok();
}

}  // namespace fabemu::replay
