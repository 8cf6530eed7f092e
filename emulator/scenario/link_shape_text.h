// One link-shape setting from the text a user wrote, with one set of rules for every place that
// takes one: scenario files (links, explicit links, the rail scale-up domain, faults' `set`) and
// `fabemu link set`. A value valid in one is valid in the other.
#pragma once

#include <cstdint>
#include <string_view>

#include "scenario/scenario.h"
#include "util/result.h"

namespace fabemu {

// The settings a link shape has, by the name both the YAML key and the CLI option use
// (`ecn_threshold` is --ecn-threshold, `loss_burst` --loss-burst).
inline constexpr std::string_view kLinkShapeKeys[] = {
    "rate",          "delay", "jitter", "reorder", "loss",    "loss_burst", "queue",
    "ecn_threshold", "ecn",   "down",   "pfc",     "corrupt", "duplicate"};

enum class ShapeSyntax {
  Scenario,  // what the link is
  Change,    // a live change: "off" (or 0) turns a setting off, back to unlimited / none
};

// Sets `key` of `shape` from `text`: rate "25gbit"; delay, jitter "2us"; loss "0.5%"; queue a
// time ("200us": how long the queue takes to drain) or a size ("64K", at least one `mtu`-byte
// packet); ecn_threshold a time ("40us") or a backlog ("200K", a switch's K); loss_burst
// "p,r[,loss_bad[,loss_good]]"; reorder and down "true" or "false"; pfc "xoff,xon[,watchdog]"
// ("200K,150K,1ms"); ecn (RED) "kmin,kmax,pmax" ("400K,1600K,20%"). The error says what is wrong
// and what would be valid, without the key's name.
Result<void> set_link_shape_field(LinkShape& shape, std::string_view key, std::string_view text,
                                  uint32_t mtu, ShapeSyntax syntax = ShapeSyntax::Scenario);

// Gilbert-Elliott loss from its four probabilities, checked (r = 0 would never leave the bad
// state).
Result<BurstLoss> make_burst_loss(double p, double r, double loss_bad = 1, double loss_good = 0);

// RED's profile, checked: kmin below kmax, 0 < pmax <= 100%.
Result<RedEcn> make_red_ecn(uint64_t kmin, uint64_t kmax, double pmax);

// PFC thresholds, checked: Xon below Xoff, Xoff at least one `mtu`-byte frame.
Result<PfcShape> make_pfc(uint64_t xoff, uint64_t xon, uint64_t watchdog_ns, uint32_t mtu);

}  // namespace fabemu
