// `link set/down/up`: live changes to the link model of a running lab.
#include <algorithm>
#include <cstdio>

#include "apply/lab.h"
#include "apply/link_control.h"
#include "apply/reroute.h"
#include "cli/commands.h"
#include "scenario/link_shape_text.h"

namespace fabemu::cli {
namespace {

// The shape change the options ask for, by the scenario file's rules (a change may also turn a
// setting "off"); `mtu` 0 checks everything but a byte queue's minimum. An exit code when one is
// malformed.
std::variant<LinkShape, int> shape_of(const LinkSetArgs& a, uint32_t mtu) {
  LinkShape s;
  const auto given = a.shape_options();
  for (const auto& [key, text] : given) {
    if (text->empty()) continue;
    if (auto r = set_link_shape_field(s, key, *text, mtu, ShapeSyntax::Change); !r) {
      std::string option = "--" + std::string(key);
      std::replace(option.begin(), option.end(), '_', '-');
      print_error("link set: " + option + ": " + r.error().message);
      return kExitBadInput;
    }
  }
  if (!a.loss.empty() && !a.loss_burst.empty()) {
    print_error("link set: give --loss or --loss-burst, not both");
    return kExitBadInput;
  }
  if (a.reorder) s.reorder = *a.reorder;
  if (a.down) s.down = *a.down;
  if (s.empty()) {
    print_error(
        "link set: nothing to change; give --rate, --delay, --jitter, --loss, --loss-burst, "
        "--queue, --ecn-threshold, --pfc, --corrupt, --duplicate or --reorder/--no-reorder");
    return kExitBadInput;
  }
  return s;
}

}  // namespace

int cmd_link_set(const LinkSetArgs& args, const LabPaths& base) {
  if (auto early = shape_of(args, 0); std::holds_alternative<int>(early))
    return std::get<int>(early);
  if (!require_root("link")) return kExitNeedsRoot;
  LabPaths paths = base;
  paths.lab = args.lab;
  auto model = lab_model(paths);
  if (!model) return lab_error(model.error());
  // Again with the lab's MTU: a byte queue must hold one full-size packet.
  auto change = shape_of(args, model->scenario.fabric.mtu);
  if (auto* code = std::get_if<int>(&change)) return *code;
  ChangeOptions opts;
  opts.accept_degraded = args.accept_degraded;
  auto done = change_links(paths, *model, args.link, std::get<LinkShape>(change), opts);
  if (!done) {
    print_error(done.error().what());
    const int err = errno_of(done.error());
    return err == EOPNOTSUPP                ? kExitUnsupported
           : err == ENOENT || err == EINVAL ? kExitBadInput
                                            : kExitFailed;
  }
  for (const LinkChange& c : *done) {
    std::string before = c.before.str(), after = c.after.str();
    std::printf("%s %s: %s -> %s%s\n", args.lab.c_str(), c.name.c_str(),
                before.empty() ? "unshaped" : before.c_str(),
                after.empty() ? "unshaped" : after.c_str(),
                c.attached_now ? " (link model attached)" : "");
  }
  if (!args.down || !args.reroute) return kExitOk;
  // Down and up move the routes as the fault timeline does (a lab across machines: every
  // machine its own switches, whoever owns the link).
  auto rerouted = reroute_link(*model, paths, args.link, *args.down);
  if (!rerouted) {
    print_error("link " + std::string(*args.down ? "down" : "up") + ": " + rerouted.error().what());
    return kExitFailed;
  }
  std::printf("%s %s: %s\n", args.lab.c_str(), args.link.c_str(), rerouted->c_str());
  return kExitOk;
}

}  // namespace fabemu::cli
