// SimAI's workload text: the header's parallel layout, the layers, and the step they make.
#include "replay/simai.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "replay/schedule.h"

namespace fabemu::replay {
namespace {

// The whitespace-separated words of one line (SimAI reads with >>: tabs or spaces).
std::vector<std::string> words_of(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct Reader {
  const std::string& origin;
  int line = 0;

  Error fail(const std::string& field, const std::string& what) const {
    return make_error(origin + ":" + std::to_string(line) + ": " + field + ": " + what);
  }
  Result<uint64_t> number(const std::string& field, const std::string& word, uint64_t max) const {
    uint64_t v = 0;
    const char* end = word.data() + word.size();
    auto [p, ec] = std::from_chars(word.data(), end, v);
    if (ec != std::errc() || p != end) return fail(field, "'" + word + "' is not a whole number");
    if (v > max) return fail(field, word + " is above " + std::to_string(max));
    return v;
  }
};

// A communication field: the collective and the group it runs on (SimAI's names: a plain type
// runs on the tensor-parallel group in the forward and input-gradient passes and on the
// data-parallel group in the weight-gradient pass; _EP on the expert-parallel group; _DP_EP on
// the data-parallel group within one expert-parallel rank).
struct Comm {
  std::optional<Collective> collective;  // none: NONE
  std::string group;                     // "tp", "dp", "ep", "dp_ep"
};

Result<Comm> parse_comm(const Reader& r, const std::string& field, const std::string& word,
                        Pass pass) {
  static const std::map<std::string, Collective> kinds = {
      {"ALLREDUCE", Collective::AllReduce},
      {"ALLGATHER", Collective::AllGather},
      {"REDUCESCATTER", Collective::ReduceScatter},
      {"ALLTOALL", Collective::AllToAll}};
  if (word == "NONE") return Comm{};
  std::string base = word, group = pass == Pass::WeightGradient ? "dp" : "tp";
  for (const auto& [suffix, g] : {std::pair{"_DP_EP", "dp_ep"}, std::pair{"_EP", "ep"}}) {
    const std::string s = suffix;
    if (base.size() > s.size() && base.ends_with(s)) {
      base.resize(base.size() - s.size());
      group = g;
      break;
    }
  }
  const auto it = kinds.find(base);
  if (it == kinds.end())
    return r.fail(field,
                  "unknown type '" + word +
                      "'; valid: NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, each also "
                      "with _EP or _DP_EP");
  return Comm{it->second, group};
}

struct Header {
  std::string policy;
  int tp = 1, ep = 1, pp = 1, vpp = 1, ga = 1, world = 0;
  uint64_t pp_comm = 0;
};

Result<Header> parse_header(const Reader& r, const std::vector<std::string>& w) {
  Header h;
  if (w.empty()) return r.fail("policy", "missing (e.g. HYBRID_TRANSFORMER_FWD_IN_BCKWD)");
  h.policy = w[0];
  static const std::vector<std::string> kPolicies = {"HYBRID_TRANSFORMER_FWD_IN_BCKWD",
                                                     "HYBRID_TRANSFORMER", "DATA", "MICRO"};
  if (std::find(kPolicies.begin(), kPolicies.end(), h.policy) == kPolicies.end())
    return r.fail("policy", "'" + h.policy +
                                "' is not replayed; valid: HYBRID_TRANSFORMER_FWD_IN_BCKWD, "
                                "HYBRID_TRANSFORMER, DATA, MICRO");
  std::map<std::string, int*> ints = {{"model_parallel_NPU_group", &h.tp},
                                      {"ep", &h.ep},
                                      {"pp", &h.pp},
                                      {"vpp", &h.vpp},
                                      {"ga", &h.ga},
                                      {"all_gpus", &h.world}};
  for (size_t i = 1; i < w.size(); ++i) {
    std::string key = w[i];
    const bool colon = key.ends_with(":");
    if (colon) key.pop_back();
    if (i + 1 >= w.size()) return r.fail(key, "has no value");
    if (key == "checkpoints" || key == "checkpoint_initiates") {
      // A count, then that many layer numbers: the layers recomputed in the backward pass.
      auto n = r.number(key, w[++i], 1 << 20);
      if (!n) return n.error();
      if (i + *n >= w.size()) return r.fail(key, "lists fewer layers than its count");
      for (uint64_t k = 0; k < *n; ++k)
        if (auto layer = r.number(key, w[++i], 1 << 20); !layer) return layer.error();
      continue;
    }
    if (key == "pp_comm") {
      auto b = r.number(key, w[++i], uint64_t{1} << 40);
      if (!b) return b.error();
      h.pp_comm = *b;
      continue;
    }
    const auto it = ints.find(key);
    if (!colon || it == ints.end())
      return r.fail(key,
                    "unknown header key; valid: model_parallel_NPU_group:, ep:, pp:, vpp:, "
                    "ga:, all_gpus:, checkpoints:, checkpoint_initiates:, pp_comm");
    auto v = r.number(key, w[++i], 1 << 20);
    if (!v) return v.error();
    *it->second = static_cast<int>(*v);
  }
  if (h.world < 1) return r.fail("all_gpus", "missing or 0: how many ranks the step has");
  for (auto [key, v] : {std::pair{"model_parallel_NPU_group", h.tp}, std::pair{"ep", h.ep},
                        std::pair{"pp", h.pp}, std::pair{"ga", h.ga}})
    if (v < 1) return r.fail(key, "must be at least 1");
  if (h.world % (h.tp * h.pp) != 0)
    return r.fail("all_gpus", std::to_string(h.world) +
                                  " ranks do not split into tensor-parallel "
                                  "groups of " +
                                  std::to_string(h.tp) + " times " + std::to_string(h.pp) +
                                  " pipeline stages");
  if ((h.world / (h.tp * h.pp)) % h.ep != 0)
    return r.fail("ep", "the data-parallel degree " + std::to_string(h.world / (h.tp * h.pp)) +
                            " is not a multiple of ep " + std::to_string(h.ep));
  return h;
}

struct Layer {
  std::string name;
  int line = 0;
  uint64_t compute[3] = {0, 0, 0};  // forward, input gradient, weight gradient (ns)
  Comm comm[3];
  uint64_t bytes[3] = {0, 0, 0};
  uint64_t update_ns = 0;
};

Result<Layer> parse_layer(const Reader& r, const std::vector<std::string>& w) {
  static const char* const kFields[] = {"name",
                                        "reserved",
                                        "forward compute",
                                        "forward type",
                                        "forward bytes",
                                        "input-gradient compute",
                                        "input-gradient type",
                                        "input-gradient bytes",
                                        "weight-gradient compute",
                                        "weight-gradient type",
                                        "weight-gradient bytes",
                                        "update time"};
  if (w.size() < 12)
    return r.fail(kFields[w.size()],
                  "missing: a layer has 12 fields (name, reserved, then "
                  "compute, type and bytes of each pass, then the update "
                  "time), this line " +
                      std::to_string(w.size()));
  if (w.size() > 12) return r.fail("layer", "has " + std::to_string(w.size()) + " fields, not 12");
  Layer l;
  l.name = w[0];
  l.line = r.line;
  const Pass passes[3] = {Pass::Forward, Pass::InputGradient, Pass::WeightGradient};
  for (int p = 0; p < 3; ++p) {
    const size_t at = 2 + 3 * p;
    auto c = r.number(kFields[at], w[at], uint64_t{1} << 50);
    if (!c) return c.error();
    l.compute[p] = *c * kSimaiTickNs;
    auto comm = parse_comm(r, kFields[at + 1], w[at + 1], passes[p]);
    if (!comm) return comm.error();
    l.comm[p] = *comm;
    auto b = r.number(kFields[at + 2], w[at + 2], uint64_t{1} << 40);
    if (!b) return b.error();
    l.bytes[p] = *b;
    if (l.comm[p].collective && *b == 0)
      return r.fail(kFields[at + 2], "0 bytes for a " + w[at + 1] + "; give its size or NONE");
  }
  auto u = r.number(kFields[11], w[11], uint64_t{1} << 50);
  if (!u) return u.error();
  l.update_ns = *u * kSimaiTickNs;
  return l;
}

// Megatron's order of ranks: tensor-parallel fastest, then data-parallel, then the pipeline
// stage (rank = stage * tp * dp + d * tp + t). The expert-parallel groups split each
// data-parallel group into runs of `ep` consecutive members; dp_ep groups take one member of
// each run. A stage's neighbours are the ranks of the same t and d in the stages beside it.
std::map<std::string, int> groups_of(Program& p, const Header& h, int rank) {
  const int dp = h.world / (h.tp * h.pp), stride = h.tp * dp;
  const int base = rank / stride * stride, t = rank % h.tp, d = rank % stride / h.tp;
  std::vector<int> tp, dpg, ep, dpep;
  for (int i = 0; i < h.tp; ++i) tp.push_back(base + d * h.tp + i);
  for (int j = 0; j < dp; ++j) dpg.push_back(base + j * h.tp + t);
  const int run = d / h.ep;
  for (int j = 0; j < h.ep; ++j) ep.push_back(base + (run * h.ep + j) * h.tp + t);
  for (int j = d % h.ep; j < dp; j += h.ep) dpep.push_back(base + j * h.tp + t);
  std::map<std::string, int> g = {{"tp", add_group(p, tp, "tp")},
                                  {"dp", add_group(p, dpg, "dp")},
                                  {"ep", add_group(p, ep, "ep")},
                                  {"dp_ep", add_group(p, dpep, "dp_ep")}};
  // The pairs with the stages beside this one, one per direction (a pair lists its sender
  // first): to the next stage and back from it, from the previous one and back to it.
  if (h.pp > 1 && h.pp_comm) {
    if (rank + stride < h.world) {
      g["pp_next_out"] = add_group(p, {rank, rank + stride}, "pp_fwd");
      g["pp_next_in"] = add_group(p, {rank + stride, rank}, "pp_bwd");
    }
    if (rank >= stride) {
      g["pp_prev_in"] = add_group(p, {rank - stride, rank}, "pp_fwd");
      g["pp_prev_out"] = add_group(p, {rank, rank - stride}, "pp_bwd");
    }
  }
  return g;
}

// One rank's iteration: forward through the layers (each collective waited for before the next
// layer's compute), then backward from the last layer: its input gradient and that collective
// (waited for by the next layer down), its weight gradient and that collective (left running
// beside the rest of the backward pass); each layer's update once its weight-gradient
// collective is done. With pipeline stages, a stage's forward pass starts once the previous
// stage's activations (`pp_comm` bytes) have arrived and ends sending its own to the next; its
// backward pass starts once the next stage's gradients have arrived and ends sending its own
// back.
std::vector<Op> rank_ops(const Program& prog, int rank, const std::vector<Layer>& layers,
                         const std::map<std::string, int>& g, uint64_t pp_bytes) {
  std::vector<Op> ops;
  auto add = [&](Op op) {
    ops.push_back(std::move(op));
    return ops.size() - 1;
  };
  // A transfer on the pair `key` names (the pair's other rank is the peer), after `deps`.
  auto transfer = [&](const char* key, OpKind kind, Pass which, std::vector<size_t> deps) {
    Op x{.kind = kind, .layer = "pipeline", .pass = which, .bytes = pp_bytes};
    x.group = g.at(key);
    const auto& pair = prog.groups[x.group].ranks;
    x.peer = pair[0] == rank ? pair[1] : pair[0];
    x.deps = std::move(deps);
    x.source = layers.front().line;
    return add(x);
  };
  std::optional<size_t> blocking;  // the collective the next compute waits for
  auto pass = [&](const Layer& l, int p, Pass which) {
    Op c{.kind = OpKind::Compute, .layer = l.name, .pass = which, .compute_ns = l.compute[p]};
    c.source = l.line;
    if (blocking) c.deps.push_back(*blocking);
    const size_t compute = add(c);
    std::optional<size_t> comm;
    if (l.comm[p].collective) {
      Op k{.kind = OpKind::Collective, .layer = l.name, .pass = which};
      k.collective = *l.comm[p].collective;
      k.group = g.at(l.comm[p].group);
      k.bytes = l.bytes[p];
      k.deps = {compute};
      k.source = l.line;
      comm = add(k);
    }
    return comm;
  };
  if (g.count("pp_prev_in")) blocking = transfer("pp_prev_in", OpKind::Recv, Pass::Forward, {});
  for (const Layer& l : layers)
    if (auto k = pass(l, 0, Pass::Forward)) blocking = k;
  if (g.count("pp_next_out")) {
    transfer("pp_next_out", OpKind::Send, Pass::Forward, {ops.size() - 1});
    blocking = transfer("pp_next_in", OpKind::Recv, Pass::InputGradient, {});
  }
  std::vector<std::optional<size_t>> weight_comm(layers.size());
  size_t last_input_gradient = 0;  // its collective, or its compute where it has none
  for (size_t i = layers.size(); i-- > 0;) {
    auto k = pass(layers[i], 1, Pass::InputGradient);
    last_input_gradient = ops.size() - 1;
    auto saved = blocking;
    blocking.reset();
    weight_comm[i] = pass(layers[i], 2, Pass::WeightGradient);
    blocking = k ? k : saved;
  }
  if (g.count("pp_prev_out"))
    transfer("pp_prev_out", OpKind::Send, Pass::InputGradient, {last_input_gradient});
  for (size_t i = layers.size(); i-- > 0;) {
    if (layers[i].update_ns == 0) continue;
    Op u{.kind = OpKind::Compute,
         .layer = layers[i].name,
         .pass = Pass::Update,
         .compute_ns = layers[i].update_ns};
    u.source = layers[i].line;
    if (weight_comm[i]) u.deps.push_back(*weight_comm[i]);
    add(u);
  }
  return ops;
}

}  // namespace

Result<Program> read_simai(std::string_view text, const std::string& origin) {
  Reader r{origin};
  std::vector<std::vector<std::string>> lines;
  std::vector<int> numbers;
  std::istringstream in{std::string(text)};
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    auto w = words_of(line);
    if (w.empty()) continue;  // blank lines, as >> skips them
    lines.push_back(std::move(w));
    numbers.push_back(n);
  }
  r.line = 1;
  if (lines.empty()) return r.fail("header", "the file is empty");
  r.line = numbers[0];
  auto h = parse_header(r, lines[0]);
  if (!h) return h.error();
  r.line = lines.size() > 1 ? numbers[1] : n + 1;
  if (lines.size() < 2) return r.fail("layer count", "missing (the line after the header)");
  if (lines[1].size() != 1) return r.fail("layer count", "expected one number on the line");
  auto count = r.number("layer count", lines[1][0], 100'000);
  if (!count) return count.error();
  if (*count == 0) return r.fail("layer count", "0 layers: nothing to replay");
  // Every rank's operations are held: up to seven per layer, four transfers between stages.
  if (static_cast<uint64_t>(h->world) * (*count * 7 + 4) > kMaxOperations)
    return r.fail("layer count", std::to_string(*count) + " layers on " + std::to_string(h->world) +
                                     " ranks are more operations than " +
                                     std::to_string(kMaxOperations) + ", what a replay holds");
  std::vector<Layer> layers;
  for (size_t i = 0; i < *count; ++i) {
    if (2 + i >= lines.size()) {
      r.line = n + 1;
      return r.fail("layer " + std::to_string(i + 1), "missing: the file ends after " +
                                                          std::to_string(i) + " of " +
                                                          std::to_string(*count) + " layers");
    }
    r.line = numbers[2 + i];
    auto l = parse_layer(r, lines[2 + i]);
    if (!l) return l.error();
    layers.push_back(std::move(*l));
  }
  if (lines.size() > 2 + *count) {
    r.line = numbers[2 + *count];
    return r.fail("layer", "more layers than the count " + std::to_string(*count) + " says");
  }
  Program p;
  p.format = "simai";
  p.source = origin;
  p.world = h->world;
  p.policy = h->policy;
  p.tp = h->tp;
  p.ep = h->ep;
  p.pp = h->pp;
  p.dp = h->world / (h->tp * h->pp);
  p.layers = static_cast<int>(layers.size());
  for (int rank = 0; rank < p.world; ++rank)
    p.ranks.push_back(rank_ops(p, rank, layers, groups_of(p, *h, rank), h->pp_comm));
  if (auto v = validate(p); !v) return v.error().context(origin);
  if (auto f = check_finishes(p); !f) return f.error().context(origin);
  return p;
}

}  // namespace fabemu::replay
