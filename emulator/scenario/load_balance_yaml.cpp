// fabric.load_balance and the workload's load_balance steps from YAML.
#include "scenario/load_balance_yaml.h"

#include <optional>
#include <string>

#include "util/units.h"

namespace fabemu::detail {

namespace {

constexpr std::string_view kLoadBalanceModes = "ecmp, flowlet, spray or adaptive";

bool is_load_balance_mode(const std::string& word) {
  return word == "ecmp" || word == "flowlet" || word == "spray" || word == "adaptive";
}

uint64_t read_flowlet_gap(const Field& g) {
  const uint64_t ns = g.parsed(parse_time_ns);
  // Below a frame's time on the fastest link every frame is a flowlet; above a second a flow
  // never changes.
  if (ns < 100 || ns > 1'000'000'000) g.fail("a gap from 100ns to 1s, e.g. 50us");
  return ns;
}

// One mode: a word (ecmp, flowlet, spray, adaptive) or a map of one of them to its parameters.
LoadBalance read_load_balance_mode(const Field& f) {
  LoadBalance lb;
  std::optional<Field> params;
  std::string word;
  if (f.is_scalar()) {
    word = f.str();
  } else {
    auto entries = f.is_map() ? f.entries() : decltype(f.entries()){};
    if (entries.size() != 1)
      f.fail(std::string("a mode (") + std::string(kLoadBalanceModes) +
             ") or one of them with its parameters, e.g. {flowlet: {gap: 50us}}");
    word = entries[0].first.str();
    if (!entries[0].second.is_null()) params = entries[0].second;
  }
  if (!is_load_balance_mode(word))
    f.fail("unknown mode '" + word + "'; valid: " + std::string(kLoadBalanceModes));
  if (word == "ecmp") {
    if (params) params->fail("ecmp takes no parameters (the hash's fields are fabric.ecmp_hash)");
  } else if (word == "flowlet") {
    lb.mode = LoadBalanceMode::Flowlet;
    if (params) {
      params->check_keys({"gap"});
      if (auto g = params->find("gap")) lb.gap_ns = read_flowlet_gap(*g);
    }
  } else if (word == "spray") {
    lb.mode = LoadBalanceMode::Spray;
    if (params) {
      params->check_keys({"order"});
      if (auto o = params->find("order"))
        lb.random = o->choice<bool>({{"round_robin", false}, {"random", true}});
    }
  } else {
    lb.mode = LoadBalanceMode::Adaptive;
    if (params) {
      params->check_keys({"granularity", "gap"});
      if (auto g = params->find("granularity"))
        lb.per_flowlet = g->choice<bool>({{"packet", false}, {"flowlet", true}});
      if (auto g = params->find("gap")) {
        if (!lb.per_flowlet) g->fail("gap is for granularity: flowlet");
        lb.gap_ns = read_flowlet_gap(*g);
      }
    }
  }
  return lb;
}

}  // namespace

// A mode for every switch, or a map of `default` and tiers or switches to modes (switch names
// are checked against the topology when it is built).
LoadBalanceSetting read_load_balance(const Field& f) {
  LoadBalanceSetting out;
  const bool overrides =
      f.is_map() && !(f.entries().size() == 1 && is_load_balance_mode(f.entries()[0].first.str()));
  if (!overrides) {
    out.lb = read_load_balance_mode(f);
    return out;
  }
  for (const auto& [key, value] : f.entries()) {
    const std::string target = key.str();
    if (target == "default")
      out.lb = read_load_balance_mode(value);
    else
      out.overrides.push_back({target, read_load_balance_mode(value), key.loc()});
  }
  return out;
}

}  // namespace fabemu::detail
