// PFC's queue mode: the lab's BPF qdisc (ebpf/pfc_qdisc.bpf.c), registered as a qdisc kind of
// the lab's own and sharing the link model's maps.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "shaping/bpffs.h"
#include "shaping/link_shaper.h"
#include "util/files.h"

#ifdef FABEMU_HAVE_PFC_QDISC
#include "pfc_qdisc.skel.h"
#endif

namespace fabemu {

#ifdef FABEMU_HAVE_PFC_QDISC
namespace {

struct Destroy {
  void operator()(pfc_qdisc* s) const { pfc_qdisc__destroy(s); }
};

// The object opened with its qdisc kind set: the kind is a string in the struct_ops section,
// which libbpf 1.1 offers no way to change before loading, so the ELF image is copied with
// the placeholder replaced (same length; the field is 16 bytes). `image` outlives the object.
struct Opened {
  std::vector<char> image;
  std::unique_ptr<pfc_qdisc, Destroy> skel;
};

Result<Opened> open_with_kind(const std::string& kind) {
  static_assert(sizeof(FABEMU_PFCQ_ID_PLACEHOLDER) == 16);
  if (kind.empty() || kind.size() > 15)
    return make_error("PFC qdisc kind '" + kind + "': 1 to 15 characters", EINVAL);
  Opened o;
  o.skel.reset(static_cast<pfc_qdisc*>(std::calloc(1, sizeof(pfc_qdisc))));
  if (!o.skel) return make_error("opening the PFC qdisc", ENOMEM);
  if (int err = pfc_qdisc__create_skeleton(o.skel.get()); err)
    return make_error("opening the PFC qdisc", -err);
  bpf_object_skeleton* s = o.skel->skeleton;
  const char* data = static_cast<const char*>(s->data);
  o.image.assign(data, data + s->data_sz);
  const char* placeholder = FABEMU_PFCQ_ID_PLACEHOLDER;
  auto at = std::search(o.image.begin(), o.image.end(), placeholder, placeholder + 16);
  if (at == o.image.end())
    return make_error("the PFC qdisc object has no kind placeholder to replace", EINVAL);
  std::fill(at, at + 16, '\0');
  std::copy(kind.begin(), kind.end(), at);
  s->data = o.image.data();
  if (int err = bpf_object__open_skeleton(s, nullptr); err)
    return make_error("opening the PFC qdisc BPF object", -err);
  return o;
}

}  // namespace

Result<void> LinkShaper::register_pfc_qdisc(const std::string& kind) {
  const std::string pin = pin_dir_ + "/" + kPfcQdiscPin;
  if (!pin_dir_.empty() && path_exists(pin)) return ok();  // this lab's, from an earlier up
  auto o = open_with_kind(kind);
  if (!o) return o.error();
  pfc_qdisc* q = o->skel.get();
  // The link model's maps: the qdisc reads the shapes and PFC buffers' thresholds and writes
  // the counters `status` shows.
  for (auto [mine, theirs] : {std::pair{q->maps.fabemu_cfg, cfg_fd()},
                              {q->maps.fabemu_counters, counters_fd()},
                              {q->maps.fabemu_pfc_cfg, pfc_cfg_fd()}})
    if (int err = bpf_map__reuse_fd(mine, theirs); err)
      return make_error(std::string("sharing map ") + bpf_map__name(mine) + " with the PFC qdisc",
                        -err);
  if (int err = pfc_qdisc__load(q); err)
    return make_error("loading the PFC qdisc (libbpf's log above says why)", -err);
  bpf_link* link = bpf_map__attach_struct_ops(q->maps.fabemu_pfcq);
  if (!link)
    return make_error("registering qdisc kind " + kind + " (a lab of the same name elsewhere?)",
                      errno);
  // Registered without a BPF link (libbpf 1.1), the kernel keeps the registration until the
  // map's element is deleted; the pin lets `down` (remove_pin_dir) find it.
  bpf_link__disconnect(link);
  bpf_link__destroy(link);
  if (!pin_dir_.empty()) {
    if (int err = bpf_map__pin(q->maps.fabemu_pfcq, pin.c_str()); err) {
      const uint32_t key = 0;
      (void)bpf_map_delete_elem(bpf_map__fd(q->maps.fabemu_pfcq), &key);
      return make_error("pinning the PFC qdisc at " + pin, -err);
    }
  }
  return ok();
}

namespace {

// libbpf's warnings during the probe, kept for its verdict instead of printed.
std::string* probe_log = nullptr;
int keep_warning(libbpf_print_level level, const char* format, va_list args) {
  if (!probe_log || level == LIBBPF_DEBUG) return 0;
  char line[512];
  std::vsnprintf(line, sizeof line, format, args);
  std::string text = line;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.rfind("libbpf: ", 0) == 0) text.erase(0, 8);
  if (probe_log->empty()) *probe_log = text;  // the first says why; the rest that it failed
  return 0;
}

}  // namespace

Result<void> LinkShaper::probe_pfc_qdisc() {
  std::string last;
  probe_log = &last;
  libbpf_print_fn_t before = libbpf_set_print(keep_warning);
  auto o = open_with_kind("fabemu_probe");
  int err = o ? pfc_qdisc__load(o->skel.get()) : 0;
  libbpf_set_print(before);
  probe_log = nullptr;
  if (!o) return o.error();
  if (err)
    return make_error("a BPF qdisc did not load (Linux 6.16+ with CONFIG_NET_SCH_BPF has them)" +
                          (last.empty() ? std::string() : "; libbpf: " + last),
                      -err);
  return ok();
}

#else

Result<void> LinkShaper::register_pfc_qdisc(const std::string&) {
  return probe_pfc_qdisc();
}

Result<void> LinkShaper::probe_pfc_qdisc() {
  return make_error("this fabemu was built without PFC's queue mode (no clang >= 15 for BPF)",
                    EOPNOTSUPP);
}

#endif

}  // namespace fabemu
