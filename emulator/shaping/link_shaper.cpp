// Loading the link-model skeleton, pinning its maps per lab, and reading and writing them.
#include "shaping/link_shaper.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "link_shaper.skel.h"
#include "shaping/bpffs.h"
#include "shaping/link_cfg.h"
#include "util/prng.h"

namespace fabemu {

namespace {

// libbpf lays per-CPU values out at 8-byte strides; ours must need no padding to match.
static_assert(sizeof(fabemu_link_counters) % 8 == 0);

std::string port(uint32_t ifindex) {
  return "ifindex " + std::to_string(ifindex);
}

// Creates a map entry unless it exists: the datapath's state and counters survive a new shape.
Result<void> create_if_absent(int fd, uint32_t key, const void* value, const std::string& what) {
  int err = bpf_map_update_elem(fd, &key, value, BPF_NOEXIST);
  if (err < 0 && err != -EEXIST) return make_error(what, -err);
  return ok();
}

Result<void> delete_if_present(int fd, uint32_t key, const std::string& what) {
  int err = bpf_map_delete_elem(fd, &key);
  if (err < 0 && err != -ENOENT) return make_error(what, -err);
  return ok();
}

Result<int> possible_cpus() {
  int n = libbpf_num_possible_cpus();
  if (n <= 0) return make_error("counting possible CPUs", -n);
  return n;
}

}  // namespace

void LinkShaper::Destroy::operator()(link_shaper* s) const {
  link_shaper__destroy(s);
}

LinkShaper::LinkShaper(std::unique_ptr<link_shaper, Destroy> skel, std::string pin_dir)
    : skel_(std::move(skel)), pin_dir_(std::move(pin_dir)) {}
LinkShaper::LinkShaper(LinkShaper&&) noexcept = default;
LinkShaper& LinkShaper::operator=(LinkShaper&&) noexcept = default;
LinkShaper::~LinkShaper() = default;  // pinned maps stay; attachments hold the program

uint64_t LinkShaper::program_digest() {
  size_t size = 0;
  const auto* bytes = static_cast<const char*>(link_shaper__elf_bytes(&size));
  return fnv1a(std::string_view(bytes, size));
}

Result<LinkShaper> LinkShaper::load(const ShaperOptions& options) {
  std::unique_ptr<link_shaper, Destroy> skel(link_shaper__open());
  if (!skel) return errno_error("opening the link shaper BPF object");
  if (!options.pin_dir.empty()) {
    FABEMU_TRY(make_pin_dir(options.pin_dir));
    for (bpf_map* map :
         {skel->maps.fabemu_cfg, skel->maps.fabemu_state, skel->maps.fabemu_counters,
          skel->maps.fabemu_ports, skel->maps.fabemu_pfc_cfg, skel->maps.fabemu_pfc_state,
          skel->maps.fabemu_lb_ports, skel->maps.fabemu_lb_routes, skel->maps.fabemu_lb_groups,
          skel->maps.fabemu_lb_seq, skel->maps.fabemu_lb_flows, skel->maps.fabemu_lb_counters,
          skel->maps.fabemu_lb_order, skel->maps.fabemu_dcqcn_cfg, skel->maps.fabemu_dcqcn_qps,
          skel->maps.fabemu_dcqcn_np, skel->maps.fabemu_dcqcn_counters,
          skel->maps.fabemu_buffer_cfg, skel->maps.fabemu_buffer_state}) {
      std::string path = options.pin_dir + "/" + bpf_map__name(map);
      if (int err = bpf_map__set_pin_path(map, path.c_str()); err < 0)
        return make_error("setting the pin path " + path, -err);
    }
  }
  if (int err = link_shaper__load(skel.get()); err < 0) {
    std::string msg = "loading the link shaper BPF program (libbpf's log above says why)";
    if (!options.pin_dir.empty())
      msg += "; maps pinned under " + options.pin_dir +
             " by an incompatible fabemu are not reused: take the lab down first";
    return make_error(msg, -err);
  }
  return LinkShaper(std::move(skel), options.pin_dir);
}

int LinkShaper::prog_fd() const {
  return bpf_program__fd(skel_->progs.fabemu_shape);
}
int LinkShaper::balance_prog_fd() const {
  return bpf_program__fd(skel_->progs.fabemu_balance);
}
int LinkShaper::roce_prog_fd() const {
  return bpf_program__fd(skel_->progs.fabemu_roce_in);
}
int LinkShaper::cfg_fd() const {
  return bpf_map__fd(skel_->maps.fabemu_cfg);
}
int LinkShaper::state_fd() const {
  return bpf_map__fd(skel_->maps.fabemu_state);
}
int LinkShaper::counters_fd() const {
  return bpf_map__fd(skel_->maps.fabemu_counters);
}
int LinkShaper::ports_fd() const {
  return bpf_map__fd(skel_->maps.fabemu_ports);
}
int LinkShaper::pfc_cfg_fd() const {
  return bpf_map__fd(skel_->maps.fabemu_pfc_cfg);
}
int LinkShaper::pfc_state_fd() const {
  return bpf_map__fd(skel_->maps.fabemu_pfc_state);
}

Result<ShaperAttachment> LinkShaper::attach(const std::string& netns_path,
                                            const std::string& ifname, AttachMethod method) {
  return ShaperAttachment::create(prog_fd(), ports_fd(), netns_path, ifname, method);
}

Result<ShaperAttachment> LinkShaper::attach_here(const std::string& ifname,
                                                 const std::string& where, AttachMethod method) {
  return ShaperAttachment::create_here(prog_fd(), ports_fd(), ifname, where, method);
}

Result<void> LinkShaper::set(uint32_t ifindex, const fabemu_link_cfg& cfg) {
  const std::string what = "setting the shape of " + port(ifindex);
  // State and counters first, so that the datapath finds them with the config.
  fabemu_link_state state{};
  FABEMU_TRY(create_if_absent(state_fd(), ifindex, &state, what + ": creating its state"));
  auto cpus = possible_cpus();
  if (!cpus) return cpus.error().context(what);
  std::vector<fabemu_link_counters> zero(static_cast<size_t>(*cpus));
  FABEMU_TRY(create_if_absent(counters_fd(), ifindex, zero.data(), what + ": creating counters"));
  if (int err = bpf_map_update_elem(cfg_fd(), &ifindex, &cfg, BPF_ANY); err < 0)
    return make_error(what, -err);
  return ok();
}

Result<void> LinkShaper::set(uint32_t ifindex, const LinkShape& shape, uint64_t seed,
                             bool policer) {
  return set(ifindex, to_cfg(shape, seed, policer));
}

Result<void> LinkShaper::set(const ShapePort& port) {
  const fabemu_link_cfg cfg = to_cfg(port);
  const std::string what = "setting PFC of " + port.direction;
  // The far end's buffer exists before the port looks it up; a port that had PFC and has none
  // now leaves no buffer behind.
  if (cfg.pfc_peer) {
    fabemu_pfc_state state{};
    FABEMU_TRY(create_if_absent(pfc_state_fd(), cfg.pfc_peer, &state, what + ": its buffer"));
    fabemu_pfc_cfg buffer = pfc_buffer_cfg(cfg);
    if (port.pfc_buffer) buffer.buffer_id = port.pfc_buffer->id;  // xoff: dynamic
    if (int err = bpf_map_update_elem(pfc_cfg_fd(), &cfg.pfc_peer, &buffer, BPF_ANY); err < 0)
      return make_error(what, -err);
  }
  if (port.buffer) FABEMU_TRY(set_buffer(*port.buffer));
  if (port.pfc_buffer) FABEMU_TRY(set_buffer(*port.pfc_buffer));
  // The NIC's DCQCN parameters before its port paces by them (a rate change moves its line).
  if (port.dcqcn) FABEMU_TRY(set_dcqcn(port.ifindex, to_dcqcn_cfg(*port.dcqcn)));
  auto before = get(port.ifindex);
  FABEMU_TRY(set(port.ifindex, cfg));
  if (before && before->pfc_peer && !cfg.pfc_peer) {
    FABEMU_TRY(delete_if_present(pfc_cfg_fd(), before->pfc_peer, what));
    FABEMU_TRY(delete_if_present(pfc_state_fd(), before->pfc_peer, what));
  }
  return ok();
}

Result<void> LinkShaper::set_buffer(const SharedBufferParams& b) {
  const std::string what = "setting the shared buffer of switch " + std::to_string(b.id - 1);
  fabemu_buffer_state state{};
  FABEMU_TRY(create_if_absent(bpf_map__fd(skel_->maps.fabemu_buffer_state), b.id, &state,
                              what + ": its occupancy"));
  const fabemu_buffer_cfg cfg = to_buffer_cfg(b);
  if (int err =
          bpf_map_update_elem(bpf_map__fd(skel_->maps.fabemu_buffer_cfg), &b.id, &cfg, BPF_ANY);
      err < 0)
    return make_error(what, -err);
  return ok();
}

Result<BufferOccupancy> LinkShaper::buffer(uint32_t id) const {
  const std::string what = "reading the shared buffer " + std::to_string(id);
  fabemu_buffer_cfg cfg{};
  fabemu_buffer_state state{};
  if (int err = bpf_map_lookup_elem(bpf_map__fd(skel_->maps.fabemu_buffer_cfg), &id, &cfg); err < 0)
    return make_error(what, -err);
  if (int err = bpf_map_lookup_elem(bpf_map__fd(skel_->maps.fabemu_buffer_state), &id, &state);
      err < 0)
    return make_error(what, -err);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // the datapath's clock (bpf_ktime_get_ns)
  const uint64_t now_ns = uint64_t(now.tv_sec) * 1'000'000'000ULL + uint64_t(now.tv_nsec);
  // The bytes that leave in the slots from now on, as the datapath counts them.
  const uint64_t from = now_ns / std::max<uint64_t>(cfg.slot_ns, 1);
  BufferOccupancy o{cfg.bytes, 0, state.peak_bytes};
  for (uint64_t j = 0; j < FABEMU_PFC_SLOTS; ++j) {
    const uint64_t i = (from + j) % FABEMU_PFC_SLOTS;
    if (state.occ.slot_epoch[i] == from + j) o.used += state.occ.slot_bytes[i];
  }
  return o;
}

Result<fabemu_link_cfg> LinkShaper::get(uint32_t ifindex) const {
  fabemu_link_cfg cfg{};
  if (int err = bpf_map_lookup_elem(cfg_fd(), &ifindex, &cfg); err < 0)
    return make_error("reading the shape of " + port(ifindex), -err);
  return cfg;
}

Result<void> LinkShaper::remove(uint32_t ifindex) {
  const std::string what = "removing the shape of " + port(ifindex);
  auto before = get(ifindex);
  FABEMU_TRY(delete_if_present(cfg_fd(), ifindex, what));  // first: the datapath stops here
  if (before && before->pfc_peer) {
    FABEMU_TRY(delete_if_present(pfc_cfg_fd(), before->pfc_peer, what + ": its PFC"));
    FABEMU_TRY(delete_if_present(pfc_state_fd(), before->pfc_peer, what + ": its PFC"));
  }
  FABEMU_TRY(delete_if_present(state_fd(), ifindex, what + ": its state"));
  FABEMU_TRY(delete_if_present(counters_fd(), ifindex, what + ": its counters"));
  return ok();
}

Result<void> LinkShaper::reset_state(uint32_t ifindex) {
  fabemu_link_state zero{};
  // BPF_F_LOCK copies under the element's spin lock, so a packet in flight sees old or new.
  if (int err = bpf_map_update_elem(state_fd(), &ifindex, &zero, BPF_F_LOCK); err < 0)
    return make_error("resetting the state of " + port(ifindex), -err);
  return ok();
}

Result<LinkCounters> LinkShaper::counters(uint32_t ifindex) const {
  auto cpus = possible_cpus();
  if (!cpus) return cpus.error();
  std::vector<fabemu_link_counters> per_cpu(static_cast<size_t>(*cpus));
  if (int err = bpf_map_lookup_elem(counters_fd(), &ifindex, per_cpu.data()); err < 0)
    return make_error("reading the counters of " + port(ifindex), -err);
  LinkCounters sum;
  for (const fabemu_link_counters& c : per_cpu) {
    sum.packets += c.packets;
    sum.bytes += c.bytes;
    sum.drop_down += c.drop_down;
    sum.drop_loss += c.drop_loss;
    sum.drop_queue += c.drop_queue;
    sum.ce_marks += c.ce_marks;
    sum.lossless_packets += c.lossless_packets;
    sum.pause_ns += c.pause_ns;
    sum.pause_events += c.pause_events;
    sum.drop_watchdog += c.drop_watchdog;
    sum.lossless_drops += c.lossless_drops;
    sum.corrupted += c.corrupted;
    sum.duplicated += c.duplicated;
    for (size_t i = 0; i < sum.queue_delay_hist.size(); ++i)
      sum.queue_delay_hist[i] += c.queue_delay_hist[i];
  }
  return sum;
}

uint64_t PortSnapshot::queued_bytes() const {
  if (busy_until_ns <= read_ns || cfg.rate_bps == 0) return 0;
  // Wire bytes (frame + overhead) drain at the rate; the counters count frames.
  const long double wire = static_cast<long double>(busy_until_ns - read_ns) * cfg.rate_bps / 8e9L;
  long double frames = wire;
  if (cfg.overhead_bytes && counters.packets)
    frames *= static_cast<long double>(counters.bytes) /
              (counters.bytes + static_cast<long double>(counters.packets) * cfg.overhead_bytes);
  return std::min(counters.bytes, static_cast<uint64_t>(frames));
}

unsigned LinkShaper::cpus() {
  auto n = possible_cpus();
  return n ? static_cast<unsigned>(*n) : 1;
}

Result<std::optional<PortSnapshot>> LinkShaper::snapshot(uint32_t ifindex) const {
  PortSnapshot s;
  if (int err = bpf_map_lookup_elem(cfg_fd(), &ifindex, &s.cfg); err < 0) {
    if (err == -ENOENT) return std::optional<PortSnapshot>();
    return make_error("reading the shape of " + port(ifindex), -err);
  }
  // BPF_F_LOCK: under the element's spin lock, as the datapath writes it.
  auto clock = [&]() -> Result<uint64_t> {
    fabemu_link_state st{};
    if (int err = bpf_map_lookup_elem_flags(state_fd(), &ifindex, &st, BPF_F_LOCK); err < 0)
      return make_error("reading the virtual clock of " + port(ifindex), -err);
    return st.next_ns;
  };
  auto before = clock();
  if (!before) return before.error();
  // A frame admitted meanwhile moves the clock: read again, three times at most (the read
  // takes microseconds; the last stands, its error one frame per admission during it).
  for (int attempt = 0;; ++attempt) {
    auto c = counters(ifindex);
    if (!c) return c.error();
    s.counters = *c;
    auto after = clock();
    if (!after) return after.error();
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    s.read_ns = uint64_t(now.tv_sec) * 1'000'000'000ULL + uint64_t(now.tv_nsec);
    s.busy_until_ns = *after;
    if (*after == *before || attempt == 2) break;
    before = after;
  }
  return std::optional<PortSnapshot>(s);
}

namespace {

// Every key of a map keyed by u32, ascending.
Result<std::vector<uint32_t>> keys_of(int fd, const std::string& what) {
  std::vector<uint32_t> keys;
  uint32_t key = 0, next = 0;
  const void* prev = nullptr;  // null: start from the first key
  int err;
  while ((err = bpf_map_get_next_key(fd, prev, &next)) == 0) {
    keys.push_back(next);
    key = next;
    prev = &key;
  }
  if (err != -ENOENT) return make_error("listing " + what, -err);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

Result<std::vector<uint32_t>> LinkShaper::shaped() const {
  return keys_of(cfg_fd(), "shaped ports");
}

Result<std::vector<ShapedPort>> LinkShaper::ports() const {
  auto keys = keys_of(ports_fd(), "attached ports");
  if (!keys) return keys.error();
  std::vector<ShapedPort> out;
  for (uint32_t k : *keys) {
    fabemu_port rec{};
    if (bpf_map_lookup_elem(ports_fd(), &k, &rec) != 0) continue;  // detached meanwhile
    const char* name = reinterpret_cast<const char*>(rec.ifname);
    out.push_back(
        {k, rec.netns_dev, rec.netns_ino, std::string(name, strnlen(name, sizeof(rec.ifname)))});
  }
  return out;
}

}  // namespace fabemu
