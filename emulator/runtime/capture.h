// Packet capture on one of a lab's ports through libpcap, opened inside the port's network
// namespace (so that labs whose namespaces have no `ip netns` name are reachable too): one
// handle per direction, frames handed over with their wall-clock timestamps.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "util/result.h"

// libpcap's handle; its header is kept out of this one, as its `struct bpf_insn` clashes with
// the kernel's <linux/bpf.h>, which the link model's headers include.
struct pcap;

namespace fabemu {

struct CaptureOptions {
  std::string filter;         // libpcap's filter syntax, on both handles
  uint32_t snaplen = 262144;  // bytes kept of each frame
  uint64_t count = 0;         // stop after this many frames (0: until stopped)
  double seconds = 0;         // stop after this long on the wall clock (0: until stopped)
};

// What a port's handles see: the frames it sends (out) and, unless `out_only`, those it
// receives (in).
struct CapturePoint {
  std::string netns;   // the namespace's pin
  std::string ifname;  // the port in it
  bool out_only = false;
};

struct CapturedFrame {
  int handle = 0;    // 0: sent by the port; 1: received
  uint64_t wall_ns;  // CLOCK_REALTIME, as the kernel stamped it
  std::span<const uint8_t> data;
  uint32_t original_length = 0;
};

struct CaptureStats {
  uint64_t frames = 0;          // handed to the sink
  uint64_t kernel_dropped = 0;  // the socket's buffer was full (pcap_stats' ps_drop)
};

class PacketCapture {
 public:
  // Opens and activates the handles inside the namespace; a bad filter is EINVAL with
  // libpcap's words.
  static Result<PacketCapture> open(const CapturePoint& at, const CaptureOptions& options);

  // Hands every frame to `sink` until the count or the time is reached, `sink` returns false,
  // or `stop` turns non-zero (polled every 100 ms).
  Result<CaptureStats> run(const std::function<bool(const CapturedFrame&)>& sink,
                           const std::atomic<int>* stop);

  // The link type (DLT_EN10MB for a lab's veths).
  int datalink() const;

 private:
  struct Closer {
    void operator()(::pcap* p) const;
  };
  using Handle = std::unique_ptr<::pcap, Closer>;
  PacketCapture(std::vector<Handle> h, CaptureOptions o)
      : handles_(std::move(h)), options_(std::move(o)) {}
  std::vector<Handle> handles_;  // [0] out, [1] in
  CaptureOptions options_;
};

}  // namespace fabemu
