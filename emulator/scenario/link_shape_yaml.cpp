// Reading link shapes and link names from scenario YAML.
#include "scenario/link_shape_yaml.h"

#include "scenario/link_shape_text.h"
#include "scenario/loader.h"
#include "util/units.h"

namespace fabemu::detail {

std::vector<std::string_view> link_shape_keys_and(std::initializer_list<std::string_view> extra) {
  std::vector<std::string_view> keys(std::begin(kLinkShapeKeys), std::end(kLinkShapeKeys));
  keys.insert(keys.end(), extra.begin(), extra.end());
  return keys;
}

namespace {

// loss_burst: {p: 1%, r: 25%, loss_bad: 100%, loss_good: 0%}, probabilities per packet.
BurstLoss read_burst_loss(const Field& f) {
  f.check_keys({"p", "r", "loss_bad", "loss_good"});
  const double p = f.at("p", "P(good -> bad) per packet, e.g. 1%").parsed(parse_loss);
  const Field r = f.at("r", "P(bad -> good) per packet, e.g. 25% for bursts of 4 packets");
  double bad = 1, good = 0;
  if (auto v = f.find("loss_bad")) bad = v->parsed(parse_loss);
  if (auto v = f.find("loss_good")) good = v->parsed(parse_loss);
  auto b = make_burst_loss(p, r.parsed(parse_loss), bad, good);
  if (!b) r.fail(b.error().message);
  return *b;
}

// pfc: {xoff: 200K, xon: 150K, watchdog: 1ms}, {xoff: dynamic, xon_offset: 18K}, or pfc: off.
PfcShape read_pfc(const Field& f, uint32_t mtu) {
  if (f.is_scalar()) {
    if (f.str() == "off") return PfcShape{};
    f.fail("pfc is {xoff: 200K, xon: 150K} (and optionally watchdog: 1ms), or off");
  }
  f.check_keys({"xoff", "xon", "xon_offset", "watchdog"});
  const Field xoff = f.at("xoff", "the buffer that pauses the sender, e.g. 200K");
  if (xoff.is_scalar() && xoff.str() == "dynamic") {
    if (auto x = f.find("xon"))
      x->fail(
          "with xoff: dynamic the pause ends xon_offset below the dynamic Xoff, e.g. "
          "xon_offset: 18K");
    uint64_t offset = 2ULL * mtu;
    if (auto o = f.find("xon_offset")) {
      offset = o->parsed(parse_size_bytes);
      if (offset < mtu) o->fail("at least one frame of fabric.mtu (" + std::to_string(mtu) + ")");
    }
    PfcShape p{kPfcXoffDynamic, offset, 0};
    if (auto w = f.find("watchdog")) p.watchdog_ns = w->parsed(parse_time_ns);
    return p;
  }
  if (auto o = f.find("xon_offset")) o->fail("only with xoff: dynamic");
  const Field xon = f.at("xon", "the buffer at which the pause ends, below xoff, e.g. 150K");
  uint64_t watchdog = 0;
  if (auto w = f.find("watchdog")) watchdog = w->parsed(parse_time_ns);
  auto p = make_pfc(xoff.parsed(parse_size_bytes), xon.parsed(parse_size_bytes), watchdog, mtu);
  if (!p) (p.error().message.rfind("xoff", 0) == 0 ? xoff : xon).fail(p.error().message);
  return *p;
}

// ecn: {kmin: 400K, kmax: 1600K, pmax: 20%}, or ecn: off.
RedEcn read_red(const Field& f) {
  if (f.is_scalar()) {
    if (f.str() == "off") return RedEcn{};
    f.fail("ecn is {kmin: 400K, kmax: 1600K, pmax: 20%} (RED marking), or off");
  }
  f.check_keys({"kmin", "kmax", "pmax"});
  const Field kmin = f.at("kmin", "the backlog from which marking starts, e.g. 400K");
  const Field kmax = f.at("kmax", "the backlog above which every frame is marked, e.g. 1600K");
  const Field pmax = f.at("pmax", "the marking probability at kmax, e.g. 20%");
  auto r = make_red_ecn(kmin.parsed(parse_size_bytes), kmax.parsed(parse_size_bytes),
                        pmax.parsed(parse_loss));
  if (!r) (r.error().message.rfind("pmax", 0) == 0 ? pmax : kmax).fail(r.error().message);
  return *r;
}

}  // namespace

namespace {

// The link-shape keys present in `map`, by the rules of `syntax` (a change may say "off"; its
// loss_burst and pfc may also be the CLI's text).
LinkShape read_shape_fields(const Field& map, uint32_t mtu, ShapeSyntax syntax) {
  LinkShape shape;
  const bool change = syntax == ShapeSyntax::Change;
  for (std::string_view key : kLinkShapeKeys) {
    auto f = map.find(key);
    if (!f) continue;
    if (key == "reorder") {
      shape.reorder = f->boolean();
    } else if (key == "down") {
      shape.down = f->boolean();
    } else if (key == "loss_burst" && (!change || f->is_map())) {
      if (shape.loss) f->fail("give either loss (independent drops) or loss_burst, not both");
      shape.loss_burst = read_burst_loss(*f);
    } else if (key == "pfc" && (!change || f->is_map())) {
      shape.pfc = read_pfc(*f, mtu);
    } else if (key == "ecn" && (!change || f->is_map())) {
      shape.ecn = read_red(*f);
    } else if (auto r = set_link_shape_field(shape, key, f->str(), mtu, syntax); !r) {
      f->fail(r.error().message);
    }
  }
  return shape;
}

}  // namespace

LinkShape read_link_shape(const Field& map, uint32_t mtu) {
  return read_shape_fields(map, mtu, ShapeSyntax::Scenario);
}

LinkShape read_link_change(const Field& map, uint32_t mtu) {
  map.check_keys(kLinkShapeKeys);
  LinkShape shape = read_shape_fields(map, mtu, ShapeSyntax::Change);
  if (shape.empty()) map.fail("nothing to change; give one of the link-shape settings");
  return shape;
}

LinkShape read_link_shape_only(const Field& map, uint32_t mtu) {
  map.check_keys(kLinkShapeKeys);
  return read_link_shape(map, mtu);
}

std::string read_link_name(const Field& field) {
  std::string name = field.str();
  size_t sep = name.find_first_of(":>");
  std::string a = name.substr(0, sep);
  std::string b = sep == std::string::npos ? "" : name.substr(sep + 1);
  if (sep == std::string::npos || !is_valid_node_name(a) || !is_valid_node_name(b)) {
    field.fail("'" + name +
               "' is not a link name; valid: 'a:b' (both directions) or 'a>b' (a to b only) "
               "with node names like leaf1, e.g. leaf1:spine2");
  }
  if (a == b) field.fail("'" + name + "' links " + a + " to itself; a link joins two nodes");
  return name;
}

}  // namespace fabemu::detail
