// libpcap handles opened inside a lab namespace: the packet socket belongs to the namespace of
// the thread that activates it and keeps it afterwards, so the reading can stay on this thread.
#include "runtime/capture.h"

#include <pcap/pcap.h>
#include <poll.h>

#include <chrono>

#include "util/netns.h"

namespace fabemu {
namespace {

Error pcap_failure(const std::string& what, pcap_t* p) {
  return make_error(what + ": " + pcap_geterr(p), EINVAL);
}

using Handle = std::unique_ptr<pcap_t, void (*)(pcap_t*)>;

// A handle on `ifname` in the calling thread's namespace, for one direction.
Result<pcap_t*> activate(const std::string& ifname, const CaptureOptions& o, pcap_direction_t d) {
  char err[PCAP_ERRBUF_SIZE] = "";
  pcap_t* p = pcap_create(ifname.c_str(), err);
  if (!p) return make_error("opening a capture on " + ifname + ": " + err, ENODEV);
  Handle h(p, pcap_close);
  // Nanoseconds, as the kernel stamps them; immediate delivery, so that a pipe to Wireshark
  // shows frames as they pass; a buffer for bursts at a dilated link's wall rate.
  pcap_set_snaplen(p, static_cast<int>(o.snaplen));
  pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO);
  pcap_set_immediate_mode(p, 1);
  pcap_set_buffer_size(p, 16 << 20);
  if (const int rc = pcap_activate(p); rc < 0)
    return make_error(
        "capturing on " + ifname + ": " + pcap_statustostr(rc) + " (" + pcap_geterr(p) + ")",
        rc == PCAP_ERROR_NO_SUCH_DEVICE ? ENODEV : EPERM);
  if (pcap_setdirection(p, d) != 0) return pcap_failure("choosing the direction on " + ifname, p);
  if (!o.filter.empty()) {
    bpf_program prog{};
    if (pcap_compile(p, &prog, o.filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0)
      return pcap_failure("the filter '" + o.filter + "'", p);
    const int rc = pcap_setfilter(p, &prog);
    pcap_freecode(&prog);
    if (rc != 0) return pcap_failure("setting the filter on " + ifname, p);
  }
  if (pcap_setnonblock(p, 1, err) != 0)
    return make_error("capturing on " + ifname + ": " + err, EINVAL);
  return h.release();
}

struct Dispatch {
  const std::function<bool(const CapturedFrame&)>* sink;
  int handle;
  uint64_t frames = 0, limit = 0;
  bool stop = false;
};

void on_frame(u_char* user, const pcap_pkthdr* h, const u_char* bytes) {
  auto* d = reinterpret_cast<Dispatch*>(user);
  if (d->stop) return;
  // With nanosecond precision libpcap stores nanoseconds in tv_usec.
  CapturedFrame f{d->handle,
                  uint64_t(h->ts.tv_sec) * 1'000'000'000ull + uint64_t(h->ts.tv_usec),
                  {bytes, h->caplen},
                  h->len};
  if (!(*d->sink)(f)) d->stop = true;
  ++d->frames;
  if (d->limit && d->frames >= d->limit) d->stop = true;
}

}  // namespace

void PacketCapture::Closer::operator()(::pcap* p) const {
  pcap_close(p);
}

Result<PacketCapture> PacketCapture::open(const CapturePoint& at, const CaptureOptions& options) {
  std::vector<PacketCapture::Handle> handles;
  auto r = run_in_netns(at.netns, [&]() -> Result<void> {
    for (pcap_direction_t d : {PCAP_D_OUT, PCAP_D_IN}) {
      if (d == PCAP_D_IN && at.out_only) break;
      auto p = activate(at.ifname, options, d);
      if (!p) return p.error();
      handles.emplace_back(*p);
    }
    return {};
  });
  if (!r) return r.error();
  return PacketCapture(std::move(handles), options);
}

int PacketCapture::datalink() const {
  return pcap_datalink(handles_.front().get());
}

Result<CaptureStats> PacketCapture::run(const std::function<bool(const CapturedFrame&)>& sink,
                                        const std::atomic<int>* stop) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options_.seconds));
  std::vector<pollfd> fds;
  for (auto& h : handles_) fds.push_back({pcap_get_selectable_fd(h.get()), POLLIN, 0});
  CaptureStats stats;
  bool done = false;
  while (!done) {
    if (stop && stop->load()) break;
    if (options_.seconds > 0 && Clock::now() >= deadline) break;
    if (::poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR)
      return errno_error("waiting for frames");
    for (size_t i = 0; i < handles_.size() && !done; ++i) {
      Dispatch d{&sink, static_cast<int>(i), 0, options_.count ? options_.count - stats.frames : 0};
      const int n = pcap_dispatch(handles_[i].get(), -1, on_frame, reinterpret_cast<u_char*>(&d));
      stats.frames += d.frames;
      if (n == PCAP_ERROR) return pcap_failure("reading frames", handles_[i].get());
      done = d.stop;
    }
  }
  for (auto& h : handles_) {
    pcap_stat s{};
    if (pcap_stats(h.get(), &s) == 0) stats.kernel_dropped += s.ps_drop;
  }
  return stats;
}

}  // namespace fabemu
