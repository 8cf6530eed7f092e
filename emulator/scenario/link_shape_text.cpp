// The rules of each link-shape setting, shared by scenario files and live changes.
#include "scenario/link_shape_text.h"

#include <string>
#include <vector>

#include "util/units.h"

namespace fabemu {
namespace {

bool is_off(std::string_view s) {
  return s == "off" || s == "unlimited" || s == "none" || s == "0";
}

Result<bool> parse_bool(std::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  return make_error("'" + std::string(text) + "' is not true or false", EINVAL);
}

// One queue limit, spelled as a time (how long the queue takes to drain at the link rate, as
// switch vendors quote buffers) or as bytes; the unit decides which. Only time units end in 's'.
Result<void> set_queue(LinkShape& shape, std::string_view text, uint32_t mtu) {
  if (!text.empty() && text.back() == 's') {
    auto ns = parse_time_ns(text);
    if (!ns) return ns.error();
    if (*ns == 0) return make_error("queue must be > 0; e.g. 200us or 64K", EINVAL);
    shape.queue_ns = *ns;
    return ok();
  }
  auto bytes = parse_size_bytes(text);
  if (!bytes)
    return make_error(bytes.error().message + " (a queue is a time like 200us or a size like 64K)",
                      EINVAL);
  if (*bytes < mtu)
    return make_error("queue of " + std::to_string(*bytes) + " bytes cannot hold one " +
                          std::to_string(mtu) + "-byte packet (fabric.mtu); valid: >= " +
                          std::to_string(mtu) + " bytes, or a time like 200us",
                      EINVAL);
  shape.queue_bytes = *bytes;
  return ok();
}

// "a,b,c" -> {"a", "b", "c"}.
std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string_view::npos) return parts;
    start = comma + 1;
  }
}

Result<BurstLoss> parse_burst(std::string_view text) {
  const std::vector<std::string_view> parts = split_commas(text);
  if (parts.size() < 2 || parts.size() > 4)
    return make_error("'" + std::string(text) + "' is not p,r[,loss_bad[,loss_good]], e.g. 1%,25%",
                      EINVAL);
  double v[4] = {0, 1, 1, 0};
  for (size_t i = 0; i < parts.size(); ++i) {
    auto p = parse_loss(parts[i]);
    if (!p) return p.error();
    v[i] = *p;
  }
  return make_burst_loss(v[0], v[1], v[2], v[3]);
}

// "xoff,xon[,watchdog]", e.g. "200K,150K" or "200K,150K,1ms"; "dynamic[,xon_offset[,watchdog]]".
Result<PfcShape> parse_pfc(std::string_view text, uint32_t mtu) {
  const std::vector<std::string_view> parts = split_commas(text);
  if (!parts.empty() && parts[0] == "dynamic") {
    if (parts.size() > 3)
      return make_error("'" + std::string(text) + "' is not dynamic[,xon_offset[,watchdog]]",
                        EINVAL);
    PfcShape p{kPfcXoffDynamic, 2ULL * mtu, 0};
    if (parts.size() >= 2) {
      auto o = parse_size_bytes(parts[1]);
      if (!o) return make_error("xon_offset: " + o.error().message, EINVAL);
      if (*o < mtu) return make_error("xon_offset: at least one frame of fabric.mtu", EINVAL);
      p.xon_bytes = *o;
    }
    if (parts.size() == 3) {
      auto w = parse_time_ns(parts[2]);
      if (!w) return make_error("watchdog: " + w.error().message, EINVAL);
      p.watchdog_ns = *w;
    }
    return p;
  }
  if (parts.size() < 2 || parts.size() > 3)
    return make_error("'" + std::string(text) + "' is not xoff,xon[,watchdog], e.g. 200K,150K,1ms",
                      EINVAL);
  auto xoff = parse_size_bytes(parts[0]);
  if (!xoff) return make_error("xoff: " + xoff.error().message, EINVAL);
  auto xon = parse_size_bytes(parts[1]);
  if (!xon) return make_error("xon: " + xon.error().message, EINVAL);
  uint64_t watchdog = 0;
  if (parts.size() == 3) {
    auto w = parse_time_ns(parts[2]);
    if (!w) return make_error("watchdog: " + w.error().message, EINVAL);
    watchdog = *w;
  }
  return make_pfc(*xoff, *xon, watchdog, mtu);
}

// "kmin,kmax,pmax", e.g. "400K,1600K,20%".
Result<RedEcn> parse_red(std::string_view text) {
  const std::vector<std::string_view> parts = split_commas(text);
  if (parts.size() != 3)
    return make_error("'" + std::string(text) + "' is not kmin,kmax,pmax, e.g. 400K,1600K,20%",
                      EINVAL);
  auto kmin = parse_size_bytes(parts[0]);
  if (!kmin) return make_error("kmin: " + kmin.error().message, EINVAL);
  auto kmax = parse_size_bytes(parts[1]);
  if (!kmax) return make_error("kmax: " + kmax.error().message, EINVAL);
  auto pmax = parse_loss(parts[2]);
  if (!pmax) return make_error("pmax: " + pmax.error().message, EINVAL);
  return make_red_ecn(*kmin, *kmax, *pmax);
}

template <typename T>
Result<void> assign(std::optional<T>& field, Result<T> value) {
  if (!value) return value.error();
  field = *value;
  return ok();
}

}  // namespace

Result<BurstLoss> make_burst_loss(double p, double r, double loss_bad, double loss_good) {
  if (r == 0)
    return make_error("r is 0: the bad state would never end; valid: 0 < r <= 100%", EINVAL);
  return BurstLoss{p, r, loss_bad, loss_good};
}

Result<RedEcn> make_red_ecn(uint64_t kmin, uint64_t kmax, double pmax) {
  if (kmax <= kmin)
    return make_error("kmax (" + std::to_string(kmax) + " bytes) must be above kmin (" +
                          std::to_string(kmin) + " bytes): marking rises from kmin to kmax, " +
                          "e.g. kmin 400K, kmax 1600K (a single threshold is ecn_threshold)",
                      EINVAL);
  if (!(pmax > 0) || pmax > 1)
    return make_error("pmax must be above 0% and at most 100%, e.g. 20%", EINVAL);
  return RedEcn{kmin, kmax, pmax};
}

Result<PfcShape> make_pfc(uint64_t xoff, uint64_t xon, uint64_t watchdog_ns, uint32_t mtu) {
  if (xoff < mtu)
    return make_error(
        "xoff of " + std::to_string(xoff) + " bytes is below one " + std::to_string(mtu) +
            "-byte frame (fabric.mtu); valid: >= " + std::to_string(mtu) + " bytes, e.g. 200K",
        EINVAL);
  if (xon >= xoff)
    return make_error("xon (" + std::to_string(xon) + " bytes) must be below xoff (" +
                          std::to_string(xoff) + " bytes): the pause ends when the buffer has " +
                          "drained to xon, e.g. xoff 200K, xon 150K",
                      EINVAL);
  return PfcShape{xoff, xon, watchdog_ns};
}

Result<void> set_link_shape_field(LinkShape& s, std::string_view key, std::string_view text,
                                  uint32_t mtu, ShapeSyntax syntax) {
  const bool off = syntax == ShapeSyntax::Change && is_off(text);
  if (key == "rate") {
    if (off) return assign(s.rate_bps, Result<uint64_t>(uint64_t{0}));
    return assign(s.rate_bps, parse_rate(text));
  }
  if (key == "ecn_threshold" && !off && !text.empty() && text.back() != 's') {
    // A backlog, as switches configure their ECN marking threshold (K).
    auto bytes = parse_size_bytes(text);
    if (!bytes)
      return make_error(
          bytes.error().message + " (an ECN threshold is a time like 40us or a backlog like 200K)",
          EINVAL);
    if (*bytes == 0) return make_error("ecn_threshold must be > 0; e.g. 40us or 200K", EINVAL);
    s.ecn_threshold_bytes = *bytes;
    return ok();
  }
  if (key == "ecn_threshold" && off) s.ecn_threshold_bytes = 0;
  if (key == "delay" || key == "jitter" || key == "ecn_threshold") {
    auto& field = key == "delay" ? s.delay_ns : key == "jitter" ? s.jitter_ns : s.ecn_threshold_ns;
    if (off) return assign(field, Result<uint64_t>(uint64_t{0}));
    return assign(field, parse_time_ns(text));
  }
  if (key == "loss" || key == "corrupt" || key == "duplicate") {
    auto& field = key == "loss" ? s.loss : key == "corrupt" ? s.corrupt : s.duplicate;
    if (off) return assign(field, Result<double>(0.0));
    return assign(field, parse_loss(text));
  }
  if (key == "loss_burst") return assign(s.loss_burst, parse_burst(text));
  if (key == "queue") {
    if (off) {
      s.queue_ns = 0;  // back to the default queue of a rate-limited link
      s.queue_bytes = 0;
      return ok();
    }
    return set_queue(s, text, mtu);
  }
  if (key == "reorder") return assign(s.reorder, parse_bool(text));
  if (key == "down") return assign(s.down, parse_bool(text));
  if (key == "ecn") {
    if (off) return assign(s.ecn, Result<RedEcn>(RedEcn{}));
    return assign(s.ecn, parse_red(text));
  }
  if (key == "pfc") {
    if (off) return assign(s.pfc, Result<PfcShape>(PfcShape{}));
    return assign(s.pfc, parse_pfc(text, mtu));
  }
  return make_error("unknown link-shape setting '" + std::string(key) + "'", EINVAL);
}

}  // namespace fabemu
