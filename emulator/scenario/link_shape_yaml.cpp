// Reading link shapes and link names from scenario YAML.
#include "scenario/link_shape_yaml.h"

#include "scenario/loader.h"
#include "util/units.h"

namespace fabemu::detail {

std::vector<std::string_view> link_shape_keys_and(std::initializer_list<std::string_view> extra) {
  std::vector<std::string_view> keys(std::begin(kLinkShapeKeys), std::end(kLinkShapeKeys));
  keys.insert(keys.end(), extra.begin(), extra.end());
  return keys;
}

namespace {

// One queue limit, spelled as a time (how long the queue takes to drain at the link rate, as
// switch vendors quote buffers) or as bytes; the unit decides which. Only time units end in 's'.
void read_queue(const Field& f, uint32_t mtu, LinkShape& shape) {
  std::string text = f.str();
  if (!text.empty() && text.back() == 's') {
    shape.queue_ns = f.parsed(parse_time_ns);
    if (*shape.queue_ns == 0) f.fail("queue must be > 0; e.g. 200us or 64K");
    return;
  }
  auto bytes = parse_size_bytes(text);
  if (!bytes) {
    f.fail(bytes.error().message + " (a queue is a time like 200us or a size like 64K)");
  }
  if (*bytes < mtu) {
    f.fail("queue of " + std::to_string(*bytes) + " bytes cannot hold one " + std::to_string(mtu) +
           "-byte packet (fabric.mtu); valid: >= " + std::to_string(mtu) +
           " bytes, or a time like 200us");
  }
  shape.queue_bytes = *bytes;
}

// loss_burst: {p: 1%, r: 25%, loss_bad: 100%, loss_good: 0%}, probabilities per packet.
BurstLoss read_burst_loss(const Field& f) {
  f.check_keys({"p", "r", "loss_bad", "loss_good"});
  BurstLoss b;
  b.p = f.at("p", "P(good -> bad) per packet, e.g. 1%").parsed(parse_loss);
  const Field r = f.at("r", "P(bad -> good) per packet, e.g. 25% for bursts of 4 packets");
  b.r = r.parsed(parse_loss);
  if (auto v = f.find("loss_bad")) b.loss_bad = v->parsed(parse_loss);
  if (auto v = f.find("loss_good")) b.loss_good = v->parsed(parse_loss);
  if (b.r == 0) r.fail("r is 0: the bad state would never end; valid: 0 < r <= 100%");
  return b;
}

}  // namespace

LinkShape read_link_shape(const Field& map, uint32_t mtu) {
  LinkShape shape;
  if (auto f = map.find("rate")) shape.rate_bps = f->parsed(parse_rate);
  if (auto f = map.find("delay")) shape.delay_ns = f->parsed(parse_time_ns);
  if (auto f = map.find("jitter")) shape.jitter_ns = f->parsed(parse_time_ns);
  if (auto f = map.find("reorder")) shape.reorder = f->boolean();
  if (auto f = map.find("loss")) shape.loss = f->parsed(parse_loss);
  if (auto f = map.find("loss_burst")) {
    if (shape.loss) f->fail("give either loss (independent drops) or loss_burst, not both");
    shape.loss_burst = read_burst_loss(*f);
  }
  if (auto f = map.find("queue")) read_queue(*f, mtu, shape);
  if (auto f = map.find("ecn_threshold")) shape.ecn_threshold_ns = f->parsed(parse_time_ns);
  if (auto f = map.find("down")) shape.down = f->boolean();
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
