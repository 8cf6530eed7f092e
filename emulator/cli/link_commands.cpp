// `link set/down/up`: live changes to the link model of a running lab.
#include <cstdio>

#include "apply/lab.h"
#include "apply/link_control.h"
#include "cli/commands.h"
#include "util/units.h"

namespace fabemu::cli {
namespace {

// --loss-burst p,r[,loss_bad[,loss_good]]
Result<BurstLoss> parse_burst(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() < 2 || parts.size() > 4)
    return make_error("'" + text + "' is not p,r[,loss_bad[,loss_good]], e.g. 1%,25%", EINVAL);
  double v[4] = {0, 1, 1, 0};
  for (size_t i = 0; i < parts.size(); ++i) {
    auto p = parse_loss(parts[i]);
    if (!p) return p.error();
    v[i] = *p;
  }
  if (v[1] == 0) return make_error("r is 0: the bad state would never end", EINVAL);
  return BurstLoss{v[0], v[1], v[2], v[3]};
}

bool is_off(const std::string& s) {
  return s == "off" || s == "unlimited" || s == "0";
}

// The shape change the options ask for; an exit code when one is malformed.
std::variant<LinkShape, int> shape_of(const LinkSetArgs& a) {
  LinkShape s;
  auto fail = [](const std::string& opt, const Error& e) {
    print_error("link set: " + opt + ": " + e.what());
    return kExitBadInput;
  };
  if (!a.rate.empty()) {
    if (is_off(a.rate)) {
      s.rate_bps = 0;
    } else if (auto r = parse_rate(a.rate)) {
      s.rate_bps = *r;
    } else {
      return fail("--rate", r.error());
    }
  }
  for (auto [opt, text, field] : {std::tuple{"--delay", &a.delay, &s.delay_ns},
                                  {"--jitter", &a.jitter, &s.jitter_ns},
                                  {"--ecn-threshold", &a.ecn, &s.ecn_threshold_ns}}) {
    if (text->empty()) continue;
    if (is_off(*text)) {
      *field = 0;
    } else if (auto r = parse_time_ns(*text)) {
      *field = *r;
    } else {
      return fail(opt, r.error());
    }
  }
  if (!a.loss.empty()) {
    auto r = parse_loss(a.loss);
    if (!r) return fail("--loss", r.error());
    s.loss = *r;
  }
  if (!a.loss_burst.empty()) {
    if (!a.loss.empty()) {
      print_error("link set: give --loss or --loss-burst, not both");
      return kExitBadInput;
    }
    auto r = parse_burst(a.loss_burst);
    if (!r) return fail("--loss-burst", r.error());
    s.loss_burst = *r;
  }
  if (!a.queue.empty()) {
    if (is_off(a.queue)) {
      s.queue_ns = 0;  // back to the default queue of a rate-limited link
    } else if (a.queue.back() == 's') {
      auto r = parse_time_ns(a.queue);
      if (!r) return fail("--queue", r.error());
      s.queue_ns = *r;
    } else {
      auto r = parse_size_bytes(a.queue);
      if (!r) return fail("--queue", r.error());
      s.queue_bytes = *r;
    }
  }
  if (a.reorder) s.reorder = *a.reorder;
  if (a.down) s.down = *a.down;
  if (s.empty()) {
    print_error(
        "link set: nothing to change; give --rate, --delay, --jitter, --loss, --loss-burst, "
        "--queue, --ecn-threshold or --reorder/--no-reorder");
    return kExitBadInput;
  }
  return s;
}

}  // namespace

int cmd_link_set(const LinkSetArgs& args, const LabPaths& base) {
  auto change = shape_of(args);
  if (auto* code = std::get_if<int>(&change)) return *code;
  if (!require_root("link")) return kExitNeedsRoot;
  LabPaths paths = base;
  paths.lab = args.lab;
  auto model = lab_model(paths);
  if (!model) return lab_error(model.error());
  ChangeOptions opts;
  opts.accept_degraded = args.accept_degraded;
  auto done = change_links(paths, *model, args.link, std::get<LinkShape>(change), opts);
  if (!done) {
    print_error(done.error().what());
    const int err = errno_of(done.error());
    return err == ENOENT || err == EINVAL || err == EOPNOTSUPP ? kExitBadInput : kExitFailed;
  }
  for (const LinkChange& c : *done) {
    std::string before = c.before.str(), after = c.after.str();
    std::printf("%s %s: %s -> %s%s\n", args.lab.c_str(), c.name.c_str(),
                before.empty() ? "unshaped" : before.c_str(),
                after.empty() ? "unshaped" : after.c_str(),
                c.attached_now ? " (link model attached)" : "");
  }
  return kExitOk;
}

}  // namespace fabemu::cli
