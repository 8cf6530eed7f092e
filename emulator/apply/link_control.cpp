// Live link model of a running lab: reading counters and shapes, changing shapes.
#include "apply/link_control.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "shaping/bpffs.h"
#include "shaping/port_setup.h"
#include "util/files.h"
#include "util/units.h"

namespace fabemu {

Result<PlanOptions> read_link_mode(const LabPaths& paths) {
  auto text = read_file(paths.shaping_file());
  if (!text) return text.error().context("reading the lab's link-model mode");
  return parse_shaping_mode(*text, paths.shaping_file());
}

namespace {

// The lab's maps, reused from their pins. A lab that came up unshaped has none yet: the first
// use loads the link model and pins them (the journal lists the pin dir from the start).
Result<LinkShaper> open_maps(const LabPaths& paths) {
  if (path_exists(paths.pin_dir())) return LinkShaper::load({paths.pin_dir()});
  auto loaded = load_link_model(paths.bpffs_root, paths.pin_dir());
  if (loaded) return loaded;
  (void)remove_pin_dir(paths.pin_dir());
  return make_error("lab " + paths.lab + " has no link model: the kernel refused to load it (" +
                        loaded.error().what() + "; see `fabemu doctor`)",
                    errno_of(loaded.error()) ? errno_of(loaded.error()) : ENOENT);
}

}  // namespace

uint64_t queue_delay_quantile(const LinkCounters& c, double q) {
  uint64_t total = 0;
  for (uint64_t n : c.queue_delay_hist) total += n;
  if (total == 0) return 0;
  const double want = q * double(total);
  uint64_t seen = 0;
  for (size_t i = 0; i < c.queue_delay_hist.size(); ++i) {
    seen += c.queue_delay_hist[i];
    if (double(seen) >= want && c.queue_delay_hist[i]) return 1ULL << (FABEMU_HIST_SHIFT + i);
  }
  return 1ULL << (FABEMU_HIST_SHIFT + c.queue_delay_hist.size() - 1);
}

Result<LinkShaper> open_link_model(const LabPaths& paths) {
  return open_maps(paths);
}

Result<LinkShaper> load_link_model(const std::string& bpffs_root, const std::string& pin_dir,
                                   const std::string& pfc_qdisc) {
  FABEMU_TRY(ensure_bpffs(bpffs_root));
  auto shaper = LinkShaper::load({pin_dir});
  if (!shaper) return shaper.error();
  if (!pfc_qdisc.empty()) FABEMU_TRY(shaper->register_pfc_qdisc(pfc_qdisc));
  return shaper;
}

namespace {

// `open` when the caller keeps the maps open, else the lab's maps opened into `holder`.
Result<LinkShaper*> maps_or(const LabPaths& paths, LinkShaper* open,
                            std::optional<LinkShaper>& holder) {
  if (open) return open;
  auto maps = open_maps(paths);
  if (!maps) return maps.error();
  holder.emplace(std::move(*maps));
  return &*holder;
}

}  // namespace

void read_buffers_and_dcqcn(const LabModel& model, const LinkShaper& shaper, LinkModelState& st) {
  const Topology& t = model.topo;
  std::vector<DcqcnQp> qps;
  const bool dcqcn = model.scenario.rdma_cc.cc == RoceCc::Dcqcn;
  if (dcqcn) {
    if (auto all = shaper.dcqcn_qps()) qps = std::move(*all);
  }
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const int node = static_cast<int>(n);
    if (auto b = shared_buffer_of(model, node)) {
      if (auto occ = shaper.buffer(b->id))
        st.buffers.push_back({node, t.nodes[n].name, b->alpha, *occ});
    } else if (dcqcn && t.nodes[n].role == Role::Host && !t.links_of(node).empty()) {
      const int l = t.links_of(node).front();
      const uint32_t port = port_ifindex(l, t.links[l].a.node != node);
      auto c = shaper.dcqcn_counters(port);
      if (!c) continue;
      HostDcqcnState h{node, t.nodes[n].name, *c, {}};
      for (const DcqcnQp& q : qps)
        if (q.ifindex == port) h.qps.push_back(q);
      st.dcqcn.push_back(std::move(h));
    }
  }
}

Result<LinkModelState> read_link_model(const LabPaths& paths, const LabModel& model,
                                       LinkShaper* open) {
  LinkModelState st;
  auto mode = read_link_mode(paths);
  if (!mode) return mode.error();
  st.mode = *mode;
  std::optional<LinkShaper> holder;
  auto maps = maps_or(paths, open, holder);
  if (!maps) return maps.error();
  const LinkShaper* shaper = *maps;
  const Topology& t = model.topo;
  for (size_t l = 0; l < t.links.size(); ++l)
    for (bool back : {false, true}) {
      DirectionState d;
      d.dir = {static_cast<int>(l), back};
      d.name = direction_name(t, static_cast<int>(l), back);
      const uint32_t key = port_ifindex(static_cast<int>(l), back);
      if (auto cfg = shaper->get(key)) {
        d.shaped = true;
        d.wall_shape = to_shape(*cfg);
        d.shape = to_real(d.wall_shape, model.time_scale);
        if (auto c = shaper->counters(key)) d.counters = *c;
      }
      st.dirs.push_back(std::move(d));
    }
  read_buffers_and_dcqcn(model, *shaper, st);
  return st;
}

Result<std::vector<int>> links_named(const Topology& topo, const std::string& link) {
  auto dirs = find_directions(topo, link);
  if (!dirs) return dirs.error();
  std::vector<int> links;
  for (const Direction& d : *dirs)
    if (std::find(links.begin(), links.end(), d.link) == links.end()) links.push_back(d.link);
  return links;
}

Result<std::vector<LinkChange>> change_links(const LabPaths& paths, const LabModel& model,
                                             const std::string& link, const LinkShape& change,
                                             const ChangeOptions& options, LabDatapath& dp) {
  const Topology& t = model.topo;
  auto dirs = find_directions(t, link);
  if (!dirs) return dirs.error().context("lab " + paths.lab);
  auto mode = dp.link_mode();
  if (!mode) return mode.error();
  if (!mode->fq && !options.accept_degraded &&
      (change.delay_ns.value_or(0) || change.jitter_ns.value_or(0) ||
       (change.pfc && change.pfc->xoff_bytes)))
    return make_error("lab " + paths.lab +
                          " polices its links (no fq on this kernel: " + mode->no_fq_reason +
                          "): delay and jitter would not be added, nor PFC hold the lossless "
                          "class; --accept-degraded sets the rest anyway",
                      EOPNOTSUPP);
  if (model.scenario.fabric.gso_bytes && per_frame_draw(change))
    return make_error("lab " + paths.lab +
                          " sends GSO super-frames (fabric.gso): loss and damage are drawn per "
                          "frame and would meet a super-frame whole",
                      EINVAL);
  // A queue shallower than two super-frames drops them whole (as the scenario check says): every
  // direction is checked before any changes.
  const uint64_t gso = model.scenario.fabric.gso_bytes;
  for (const Direction& d : gso ? *dirs : std::vector<Direction>{}) {
    // An unshaped (or another machine's) port: the change alone, with the default queue.
    auto cfg = dp.port_config(port_ifindex(d.link, d.b_to_a));
    LinkShape merged = cfg ? to_real(to_shape(*cfg), model.time_scale) : LinkShape{};
    merged.merge(change);
    if (const auto q = queue_capacity_bytes(merged); q && *q < 2 * gso)
      return make_error("lab " + paths.lab + ": " + direction_name(t, d.link, d.b_to_a) + " (" +
                            merged.str() + ") would queue " + format_size(*q) +
                            " before it drops, less than two of its GSO super-frames (fabric.gso); "
                            "give it a deeper queue",
                        EINVAL);
  }
  std::vector<LinkChange> out;
  for (const Direction& d : *dirs) {
    // A lab across machines: each shapes the directions that leave its own nodes.
    const int from = (d.b_to_a ? t.links[d.link].b : t.links[d.link].a).node;
    if (!local_node(model, from)) continue;
    auto cfg = dp.port_config(port_ifindex(d.link, d.b_to_a));
    const bool shaped = static_cast<bool>(cfg);
    LinkChange c;
    // The change is in the real fabric's units, as the scenario is; the port runs dilated.
    const LinkShape wall_before = shaped ? to_shape(*cfg) : LinkShape{};
    c.before = to_real(wall_before, model.time_scale);
    LinkShape merged = c.before;
    merged.merge(change);
    ShapePort port = port_of(model, paths, d.link, d.b_to_a, *mode, merged);
    c.name = port.direction;
    if (shaped) port.seed = cfg->seed;  // the loss sequence carries on
    // What the datapath will enforce, in scenario terms: zeros read as "off", the default queue
    // of a rate-limited link appears.
    c.after = to_real(to_shape(to_cfg(port)), model.time_scale);
    const std::string netns = node_netns_path(model, paths, from);
    if (!shaped) {
      FABEMU_TRY(dp.attach_port(netns, port));
      c.attached_now = true;
    } else {
      FABEMU_TRY(dp.set_port(port));
      // Deeper queues or longer delays than fq was sized for: grow its limits (it keeps its
      // packets); the program stays attached. htb follows the rate: a new class rate (queued
      // packets stay), htb added to a port that had no rate, removed from one that has none.
      const bool grow_fq = port.fq && !(*port.fq == fq_params_for(wall_before));
      const auto htb_before = mode->htb ? htb_params_for(wall_before) : std::nullopt;
      if (grow_fq || port.htb != htb_before)
        FABEMU_TRY(dp.resize_port_qdisc(netns, port, grow_fq, htb_before.has_value()));
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace fabemu
