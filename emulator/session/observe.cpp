// `capture` and the counters `metrics` and `top` read: a running lab seen from outside.
#include "session/observe.h"

#include <sys/stat.h>

#include "apply/link_control.h"
#include "runtime/telemetry.h"
#include "session/session.h"
#include "util/files.h"
#include "util/units.h"

namespace fabemu::session {
namespace {

// What a port of node `node` sees of link `link` (the end at `node`): its own direction out,
// the peer's in.
CaptureTarget port_target(const Topology& t, int link, bool at_b, bool out_only) {
  const Link& l = t.links[link];
  const LinkEnd& end = at_b ? l.b : l.a;
  CaptureTarget c{end.node, end.ifname, out_only, {}};
  const std::string name = link_name(t, l);
  const std::string where = t.nodes[end.node].name + "'s port " + end.ifname;
  c.interfaces.push_back({name, direction_name(t, link, at_b) + " (sent by " + where + ")"});
  if (!out_only)
    c.interfaces.push_back({name, direction_name(t, link, !at_b) + " (received by " + where + ")"});
  return c;
}

Error bad_input(const std::string& message) {
  return with_failure(make_error(message), Failure::BadInput);
}

// The time-scale file's modification time: when `up` set the lab's time scale.
Result<int64_t> lab_epoch(const LabPaths& paths) {
  struct stat st {};
  if (::stat(paths.time_scale_file().c_str(), &st) != 0)
    return errno_error("reading the lab's epoch (" + paths.time_scale_file() + ")");
  return int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

Result<CaptureTarget> resolve_capture_target(const LabModel& m, const std::string& target) {
  const Topology& t = m.topo;
  const auto sep = target.find_first_of(":>");
  if (sep == std::string::npos || sep == 0 || sep + 1 == target.size())
    return bad_input("capture target '" + target +
                     "': give a link (a:b, captured at a's port), a direction (a>b) or a port "
                     "(NODE:IFNAME)");
  const std::string first = target.substr(0, sep), second = target.substr(sep + 1);
  const bool one_way = target[sep] == '>';
  // A port by its interface name ("h1:eth0"; a switch's ports are named after their peers, so
  // "leaf1:h1" names the same port either way).
  if (!one_way)
    for (size_t l = 0; l < t.links.size(); ++l)
      for (bool at_b : {false, true}) {
        const LinkEnd& e = at_b ? t.links[l].b : t.links[l].a;
        if (t.nodes[e.node].name == first && e.ifname == second)
          return port_target(t, static_cast<int>(l), at_b, false);
      }
  auto dirs = find_directions(t, target);
  if (!dirs) return bad_input("capture target '" + target + "': " + dirs.error().message);
  // The direction that leaves the first node: captured at its port.
  std::vector<Direction> from_first;
  for (const Direction& d : *dirs) {
    const Link& l = t.links[d.link];
    if (t.nodes[(d.b_to_a ? l.b : l.a).node].name == first) from_first.push_back(d);
  }
  if (from_first.size() != 1)
    return bad_input("capture target '" + target + "' names " + std::to_string(from_first.size()) +
                     " links between " + first + " and " + second + ": name one port as " + first +
                     ":IFNAME");
  return port_target(t, from_first[0].link, from_first[0].b_to_a, one_way);
}

uint64_t FabricClock::stamp(uint64_t wall_ns) const {
  if (wall || factor == 1) return wall_ns;
  return uint64_t(epoch_ns + int64_t(since_epoch_ns(int64_t(wall_ns))));
}

Result<CaptureStats> capture(const CaptureRequest& req, const LabPaths& base, CaptureSink& sink,
                             const std::atomic<int>* interrupt) {
  FABEMU_TRY(need_root("capture"));
  LabPaths paths = base;
  paths.lab = req.lab;
  auto model = open_lab(paths);
  if (!model) return absent_is_no_lab(model.error());
  auto target = resolve_capture_target(*model, req.target);
  if (!target) return target.error();
  for (PcapngInterface& i : target->interfaces) {
    i.filter = req.options.filter;
    i.snaplen = req.options.snaplen;
  }
  if (!local_node(*model, target->node))
    return make_error("capture target '" + req.target +
                          "': " + model->topo.nodes[target->node].name +
                          " is on another machine of the lab: run capture there",
                      EOPNOTSUPP);
  auto epoch = lab_epoch(paths);
  if (!epoch) return epoch.error();
  const FabricClock clock{*epoch, model->time_scale.factor, req.wall};
  auto pcap = PacketCapture::open(
      {node_netns_path(*model, paths, target->node), target->ifname, target->out_only},
      req.options);
  // A filter libpcap cannot compile is bad input (EINVAL); the rest, the system's refusal.
  if (!pcap && pcap.error().code == std::errc::invalid_argument)
    return bad_input("capture on " + req.target + ": " + pcap.error().message);
  if (!pcap) return pcap.error().context("capture on " + req.target);
  if (!sink.begin(*target, clock)) return CaptureStats{};
  return pcap->run(
      [&](const CapturedFrame& f) {
        return sink.frame(static_cast<uint32_t>(f.handle), clock.stamp(f.wall_ns), f.data,
                          f.original_length);
      },
      interrupt);
}

// ---- LabWatch -------------------------------------------------------------------------------

Result<std::unique_ptr<LabWatch>> LabWatch::open(const std::string& lab, const LabPaths& base) {
  std::unique_ptr<LabWatch> w(new LabWatch());
  w->paths_ = base;
  w->paths_.lab = lab;
  auto model = open_lab(w->paths_);
  if (!model) return absent_is_no_lab(model.error());
  w->model_ = std::move(*model);
  if (auto mode = read_link_mode(w->paths_)) w->shaping_ = shaping_mode_name(*mode);
  w->clock_.factor = w->model_.time_scale.factor;
  if (auto epoch = lab_epoch(w->paths_)) w->clock_.epoch_ns = *epoch;
  w->sampler_ =
      std::make_unique<TelemetrySampler>(w->model_, w->paths_, std::chrono::milliseconds(1000));
  return w;
}

LabWatch::~LabWatch() = default;

bool LabWatch::local(size_t dir) const {
  const Link& l = model_.topo.links[dir / 2];
  return local_node(model_, dir % 2 ? l.b.node : l.a.node);
}

bool LabWatch::gone() const {
  return !path_exists(paths_.journal());
}

LabReading LabWatch::read() {
  LabReading r;
  const auto start = std::chrono::steady_clock::now();
  r.sample = sampler_->mark();
  const auto end = std::chrono::steady_clock::now();
  r.read_seconds = std::chrono::duration<double>(end - start).count();
  r.fabric_s = clock_.since_epoch_ns(realtime_ns()) / 1e9;
  r.error = sampler_->error();
  if (auto step = read_file(paths_.step_file())) r.step = *step;
  while (!r.step.empty() && r.step.back() == '\n') r.step.pop_back();
  return r;
}

}  // namespace fabemu::session
