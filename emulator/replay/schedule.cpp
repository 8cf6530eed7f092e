// The streams' semantics, played on a virtual clock; the figures of a timeline.
#include "replay/schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "util/json.h"
#include "util/units.h"

namespace fabemu::replay {
namespace {

// A collective or a send/receive pair is one event across ranks: the k-th operation each
// member issues on the group (a pair's group is per direction).
struct Instance {
  int group = 0;
  size_t seq = 0;
  bool operator<(const Instance& o) const {
    return group != o.group ? group < o.group : seq < o.seq;
  }
};

}  // namespace

Result<Timeline> simulate(const Program& p, const Duration& duration) {
  const int n = p.world;
  Timeline t(n);
  std::vector<std::vector<bool>> done(n);
  std::vector<std::vector<Instance>> instance(n);
  for (int r = 0; r < n; ++r) {
    t[r].resize(p.ranks[r].size());
    done[r].assign(p.ranks[r].size(), false);
    std::map<int, size_t> seq;
    for (const Op& op : p.ranks[r])
      instance[r].push_back({op.group, op.kind == OpKind::Compute ? 0 : seq[op.group]++});
  }
  // Each rank's next operation per stream; an operation is ready once its stream's previous
  // one and its waits are done, at the latest of their ends.
  std::vector<std::map<int, int64_t>> stream_free(n);
  std::map<Instance, std::map<int, std::pair<size_t, int64_t>>> arrived;  // rank -> (op, ready)
  auto ready_at = [&](int r, size_t i) -> std::optional<int64_t> {
    const Op& op = p.ranks[r][i];
    int64_t at = stream_free[r][Program::stream_of(op)];
    for (size_t d : op.deps) {
      if (!done[r][d]) return std::nullopt;
      at = std::max(at, t[r][d].end_ns);
    }
    return at;
  };
  // Per rank, the operations still to place, in issue order per stream.
  std::vector<std::map<int, std::vector<size_t>>> queue(n);
  for (int r = 0; r < n; ++r)
    for (size_t i = p.ranks[r].size(); i-- > 0;)
      queue[r][Program::stream_of(p.ranks[r][i])].push_back(i);  // back() is the next
  size_t left = 0;
  for (int r = 0; r < n; ++r) left += p.ranks[r].size();
  while (left > 0) {
    bool progress = false;
    for (int r = 0; r < n; ++r)
      for (auto& [stream, q] : queue[r]) {
        while (!q.empty()) {
          const size_t i = q.back();
          const Op& op = p.ranks[r][i];
          const Instance key = instance[r][i];
          if (op.kind != OpKind::Compute && arrived[key].count(r)) break;  // waiting for peers
          const auto at = ready_at(r, i);
          if (!at) break;
          if (op.kind == OpKind::Compute) {
            t[r][i] = {*at, *at + std::llround(duration(r, op))};
            done[r][i] = true;
            stream_free[r][stream] = t[r][i].end_ns;
            q.pop_back();
            --left;
            progress = true;
            continue;
          }
          auto& members = arrived[key];
          members[r] = {i, *at};
          progress = true;
          if (members.size() < p.groups[op.group].ranks.size()) break;
          // The last member is here: all start together and take the same time.
          int64_t start = 0;
          double longest = 0;
          for (const auto& [m, got] : members) {
            start = std::max(start, got.second);
            longest = std::max(longest, duration(m, p.ranks[m][got.first]));
          }
          for (const auto& [m, got] : members) {
            t[m][got.first] = {start, start + std::llround(longest)};
            done[m][got.first] = true;
            stream_free[m][Program::stream_of(p.ranks[m][got.first])] = t[m][got.first].end_ns;
            queue[m][Program::stream_of(p.ranks[m][got.first])].pop_back();
            --left;
          }
          arrived.erase(key);
          break;  // this stream's next may now be ready; the outer loop comes back
        }
      }
    if (!progress)
      return make_error("the replay cannot finish: " + std::to_string(left) +
                        " operations wait for each other in a circle");
  }
  return t;
}

Result<void> check_finishes(const Program& p) {
  auto t = simulate(p, [](int, const Op&) { return 1.0; });
  if (!t) return t.error();
  return ok();
}

namespace {
std::string time_of(double ns) {
  return format_time_short(static_cast<uint64_t>(std::max(0.0, ns) + 0.5));
}
}  // namespace

std::string describe_passes(const IterationSummary& s) {
  std::string out;
  for (const auto& [pass, ns] : s.pass_ns)
    out += (out.empty() ? "" : ", ") + pass + " " + time_of(ns);
  return out;
}

std::string describe_iteration(const IterationSummary& s) {
  return "slowest rank " + std::to_string(s.slowest_rank) + ": " + describe_passes(s) +
         "; compute " + time_of(s.compute_ns) + ", communication exposed " +
         time_of(s.exposed_comm_ns);
}

IterationSummary summarize(const Program& p, const Timeline& t) {
  IterationSummary s;
  std::vector<double> last(p.world, 0);
  for (int r = 0; r < p.world; ++r)
    for (const Span& sp : t[r]) last[r] = std::max(last[r], static_cast<double>(sp.end_ns));
  s.slowest_rank = static_cast<int>(std::max_element(last.begin(), last.end()) - last.begin());
  s.iteration_ns = last[s.slowest_rank];
  const auto& ops = p.ranks[s.slowest_rank];
  const auto& spans = t[s.slowest_rank];
  std::map<std::string, std::pair<double, double>> pass_span;
  std::map<std::string, size_t> layer_index;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const Span& sp = spans[i];
    if (op.kind == OpKind::Compute) s.compute_ns += sp.ns();
    const std::string pass(name_of(op.pass));
    auto [it, fresh] = pass_span.try_emplace(pass, sp.start_ns, sp.end_ns);
    if (!fresh)
      it->second = {std::min(it->second.first, double(sp.start_ns)),
                    std::max(it->second.second, double(sp.end_ns))};
    if (!op.layer.empty()) {
      auto [li, added] = layer_index.try_emplace(op.layer, s.layer_ns.size());
      if (added) s.layer_ns.push_back({op.layer, {}});
      s.layer_ns[li->second].second[pass] += sp.ns();
    }
  }
  for (const auto& [pass, span] : pass_span) s.pass_ns[pass] = span.second - span.first;
  s.exposed_comm_ns = std::max(0.0, s.iteration_ns - s.compute_ns);
  // Collectives by what they are (kind, size, group kind and size): the slowest member's time.
  // Each rank's operation of the k-th instance on a group.
  std::vector<std::map<std::pair<int, size_t>, size_t>> at(p.world);
  for (int r = 0; r < p.world; ++r) {
    std::map<int, size_t> seq;
    for (size_t i = 0; i < p.ranks[r].size(); ++i)
      if (p.ranks[r][i].kind != OpKind::Compute)
        at[r][{p.ranks[r][i].group, seq[p.ranks[r][i].group]++}] = i;
  }
  std::map<std::string, CollectiveFigure> by_what;
  std::vector<std::string> order;
  for (int r = 0; r < p.world; ++r)
    for (const auto& [instance, i] : at[r]) {
      const Op& op = p.ranks[r][i];
      if (op.kind != OpKind::Collective || p.groups[op.group].ranks.front() != r) continue;
      double longest = 0;  // the members' longest span in it
      for (int m : p.groups[op.group].ranks)
        longest = std::max(longest, static_cast<double>(t[m][at[m].at(instance)].ns()));
      const int size = static_cast<int>(p.groups[op.group].ranks.size());
      const std::string what = std::string(name_of(op.collective)) + " " +
                               std::to_string(op.bytes) + " on " + p.groups[op.group].kind +
                               " of " + std::to_string(size);
      auto [it, fresh] = by_what.try_emplace(what);
      if (fresh) order.push_back(what);
      CollectiveFigure& f = it->second;
      f.what = std::string(name_of(op.collective)) + " " + format_size(op.bytes) + " on " +
               p.groups[op.group].kind + " groups of " + std::to_string(size);
      f.time_ns = (f.time_ns * f.count + longest) / (f.count + 1);
      ++f.count;
      f.busbw_Bps = f.time_ns > 0 ? static_cast<double>(op.bytes) / (f.time_ns * 1e-9) *
                                        bus_factor(op.collective, size)
                                  : 0;
    }
  for (const std::string& w : order) s.collectives.push_back(by_what[w]);
  return s;
}

std::string record_json(const RankRecord& r) {
  Json ops = Json::array();
  for (const auto& it : r.ops) {
    Json spans = Json::array();
    for (const Span& sp : it) spans.push_back({sp.start_ns, sp.end_ns});
    ops.push_back(std::move(spans));
  }
  return Json{{"rank", r.rank},       {"start_ns", r.start_ns}, {"ops", ops},
              {"checked", r.checked}, {"wrong", r.wrong},       {"first_wrong", r.first_wrong}}
      .dump();
}

Result<RankRecord> parse_record_json(const std::string& text, const std::string& origin) {
  try {
    const Json j = Json::parse(text);
    RankRecord r;
    r.rank = j.at("rank").get<int>();
    r.start_ns = j.at("start_ns").get<std::vector<int64_t>>();
    for (const Json& it : j.at("ops")) {
      r.ops.emplace_back();
      for (const Json& sp : it)
        r.ops.back().push_back({sp.at(0).get<int64_t>(), sp.at(1).get<int64_t>()});
    }
    r.checked = j.at("checked").get<uint64_t>();
    r.wrong = j.at("wrong").get<uint64_t>();
    r.first_wrong = j.at("first_wrong").get<std::string>();
    if (r.ops.size() != r.start_ns.size())
      return make_error(origin + ": ops and start_ns differ in length");
    return r;
  } catch (const Json::exception& e) {
    return make_error(origin + ": " + e.what());
  }
}

Timeline iteration_timeline(const std::vector<RankRecord>& records, size_t k) {
  int64_t first = std::numeric_limits<int64_t>::max();
  for (const RankRecord& r : records) first = std::min(first, r.start_ns.at(k));
  Timeline t;
  for (const RankRecord& r : records) {
    const int64_t offset = r.start_ns.at(k) - first;
    t.push_back(r.ops.at(k));
    for (Span& sp : t.back()) sp.start_ns += offset, sp.end_ns += offset;
  }
  return t;
}

}  // namespace fabemu::replay
