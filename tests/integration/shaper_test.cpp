// The eBPF link model on the running kernel: BPF_PROG_TEST_RUN on crafted frames, map pinning,
// attachment, and UDP through a policed veth between two namespaces.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "apply/rtnl.h"
#include "apply/veth.h"
#include "doctor/probe.h"
#include "frames.h"
#include "shaping/bpffs.h"
#include "shaping/link_cfg.h"
#include "shaping/link_shaper.h"
#include "util/bpf_sys.h"
#include "util/netns.h"
#include "util/process.h"

namespace fabemu {
namespace {

using namespace std::chrono_literals;

// BPF_PROG_TEST_RUN gives the skb the loopback device of the caller's namespace for ifindex 1,
// and the maps of an unpinned LinkShaper belong to this process alone: no port is touched.
constexpr uint32_t kLo = 1;
// A frame the wire loses: redirected to no device, so that the sender is not told (a test run
// only returns the verdict). A tail drop is the port's own queue's, told as a qdisc's is.
constexpr int kWireDrop = TC_ACT_REDIRECT;
constexpr int kQueueDrop = TC_ACT_SHOT;

std::optional<std::string> bpf_unavailable() {
  if (::geteuid() != 0) return "needs root (CAP_BPF, CAP_NET_ADMIN)";
  auto shaper = LinkShaper::load();
  if (!shaper) return "this kernel does not load the link model: " + shaper.error().what();
  return std::nullopt;
}

uint64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock of bpf_ktime_get_ns
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

struct Verdict {
  int action = -1;  // TC_ACT_OK, kWireDrop, kQueueDrop
  uint64_t tstamp = 0;
  std::vector<uint8_t> frame;
};

class ShaperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = bpf_unavailable()) GTEST_SKIP() << *why;
    auto s = LinkShaper::load();
    ASSERT_TRUE(s) << s.error().what();  // the kernel loads BPF: this program must load too
    shaper_.emplace(std::move(*s));
  }

  // `gso_segs` > 1: a GSO super-frame of that many frames of `gso_size` bytes of payload.
  Verdict run(const std::vector<uint8_t>& frame, uint32_t ifindex = kLo, uint64_t tstamp = 0,
              uint32_t ingress_ifindex = 0, uint32_t gso_segs = 0, uint32_t gso_size = 0) {
    return run_prog(shaper_->prog_fd(), frame, ifindex, tstamp, ingress_ifindex, gso_segs,
                    gso_size);
  }
  Verdict run_prog(int prog_fd, const std::vector<uint8_t>& frame, uint32_t ifindex = kLo,
                   uint64_t tstamp = 0, uint32_t ingress_ifindex = 0, uint32_t gso_segs = 0,
                   uint32_t gso_size = 0) {
    __sk_buff ctx{}, ctx_out{};
    ctx.ifindex = ifindex;
    ctx.tstamp = tstamp;
    ctx.ingress_ifindex = ingress_ifindex;
    ctx.gso_segs = gso_segs;
    ctx.gso_size = gso_size;
    Verdict v;
    v.frame.resize(frame.size() + 64);
    bpf_test_run_opts opts{};
    opts.sz = sizeof(opts);
    opts.data_in = frame.data();
    opts.data_size_in = uint32_t(frame.size());
    opts.data_out = v.frame.data();
    opts.data_size_out = uint32_t(v.frame.size());
    opts.ctx_in = &ctx;
    opts.ctx_size_in = sizeof(ctx);
    opts.ctx_out = &ctx_out;
    opts.ctx_size_out = sizeof(ctx_out);
    opts.repeat = 1;
    int err = bpf_prog_test_run_opts(prog_fd, &opts);
    EXPECT_EQ(err, 0) << "BPF_PROG_TEST_RUN: " << std::strerror(-err);
    v.action = int(opts.retval);
    v.tstamp = ctx_out.tstamp;
    v.frame.resize(opts.data_size_out);
    return v;
  }

  void set(const fabemu_link_cfg& cfg, uint32_t ifindex = kLo) {
    auto r = shaper_->set(ifindex, cfg);
    ASSERT_TRUE(r) << r.error().what();
  }
  LinkCounters counters(uint32_t ifindex = kLo) {
    auto c = shaper_->counters(ifindex);
    EXPECT_TRUE(c) << c.error().what();
    return c ? *c : LinkCounters{};
  }
  // Expects frames of `frame_bytes` (+ overhead) sent back to back to leave exactly
  // wire*8e9/rate ns apart (the remainder carried), the first at now + serialization + delay.
  // `attempts` > 1: where consecutive runs can come further apart than a frame's serialization
  // time (the VM lane's emulated CPU, descheduled now and then), the link goes idle between
  // them and the spacing restarts; such an attempt is retried from an empty link (`cfg`).
  void expect_departures(uint64_t rate, uint64_t delay, size_t frame_bytes, uint32_t overhead,
                         int n, int attempts = 1, const fabemu_link_cfg* cfg = nullptr) {
    using u128 = unsigned __int128;  // the reference arithmetic must not overflow either
    const u128 wire_bits_ns = u128(frame_bytes + overhead) * 8'000'000'000ull;
    const auto frame = udp_frame(frame_bytes);
    const uint64_t tx0 = uint64_t(wire_bits_ns / rate);
    for (int attempt = 1;; ++attempt) {
      const uint64_t before = mono_ns();
      const Verdict first = run(frame);
      const uint64_t after = mono_ns();
      ASSERT_EQ(first.action, TC_ACT_OK);
      EXPECT_GE(first.tstamp, before + tx0 + delay);
      EXPECT_LE(first.tstamp, after + tx0 + delay);
      std::vector<uint64_t> got, want;
      bool idle = false;  // a run came after the link had sent everything
      for (int k = 1; k < n; ++k) {
        const uint64_t at = mono_ns();
        Verdict v = run(frame);
        ASSERT_EQ(v.action, TC_ACT_OK);
        idle |= at > first.tstamp + uint64_t(wire_bits_ns * u128(k) / rate) - tx0 - delay;
        got.push_back(v.tstamp - first.tstamp);
        want.push_back(uint64_t(wire_bits_ns * u128(k + 1) / rate) - tx0);
      }
      if (got == want || !idle || attempt >= attempts) {
        for (size_t k = 0; k < got.size(); ++k)
          EXPECT_EQ(got[k], want[k]) << "frame " << k + 1 << " at " << rate << " bit/s";
        return;
      }
      std::printf("attempt %d at %llu bit/s: a run came after the link went idle; again\n", attempt,
                  static_cast<unsigned long long>(rate));
      ASSERT_TRUE(shaper_->remove(kLo));
      set(*cfg);
    }
  }

  // Which of n frames the link drops.
  std::vector<bool> drops(int n) {
    std::vector<bool> out;
    auto frame = udp_frame(200);
    for (int i = 0; i < n; ++i) out.push_back(run(frame).action == kWireDrop);
    return out;
  }

  std::optional<LinkShaper> shaper_;
};

// A config with a rate and no queue limit, so that a backlog of any length can build.
fabemu_link_cfg unqueued(uint64_t rate_bps, uint64_t delay_ns = 0) {
  LinkShape s;
  s.rate_bps = rate_bps;
  s.delay_ns = delay_ns;
  fabemu_link_cfg cfg = to_cfg(s, 1, false);
  cfg.queue_ns = 0;
  return cfg;
}

// A RoCEv2 frame (UDP to 4791): the default lossless class.
std::vector<uint8_t> roce_frame(size_t size) {
  std::vector<uint8_t> f = udp_frame(size);
  const uint16_t port = htons(4791);
  std::memcpy(f.data() + sizeof(ethhdr) + sizeof(iphdr) + 2, &port, 2);
  return f;
}

// PFC on a port whose far end is kBuffer: a 1 Mbit/s link with Xoff 8000 and Xon 3000 bytes, so
// that the buffer's slots are 8 ms (an eighth of Xoff's drain time) and a 1000-byte frame takes
// 8 ms to send.
constexpr uint32_t kBuffer = 4000;  // any key: the buffer is a map entry, not a device

ShapePort pfc_port(uint64_t watchdog_ns = 0) {
  ShapePort p;
  p.ifindex = kLo;
  p.direction = "h1>leaf1";
  p.seed = 1;
  p.shape.rate_bps = 1'000'000;
  p.shape.pfc = PfcShape{8000, 3000, watchdog_ns};
  p.pfc_peer = kBuffer;
  p.lossless.udp_port = 4791;
  return p;
}

class PfcTest : public ShaperTest {
 protected:
  // Fills the far end's buffer: ten lossless 1000-byte frames that came in over kBuffer leave
  // the far switch through a 1 Mbit/s port (this one, configured as that port for the moment)
  // 8 ms apart: 10000 bytes, over Xoff, draining to Xon ~56 ms from now. Then makes this port
  // the PFC port again. Returns when the fill began.
  // `buffer_id`: the far switch's shared buffer, which the fill occupies too.
  uint64_t fill_far_buffer(const ShapePort& port, uint32_t buffer_id = 0) {
    auto r = shaper_->set(port);
    EXPECT_TRUE(r) << r.error().what();
    auto pfc = shaper_->get(kLo);
    EXPECT_TRUE(pfc);
    if (!r || !pfc) return 0;
    fabemu_link_cfg egress = unqueued(1'000'000);
    egress.lossless_udp_port = 4791;
    egress.queue_bytes = 2000;  // lossy frames beyond two drop; lossless ones from kBuffer not
    egress.buffer_id = buffer_id;
    set(egress);
    const uint64_t t0 = mono_ns();
    for (int i = 0; i < 10; ++i)
      EXPECT_EQ(run(roce_frame(1000), kLo, 0, kBuffer).action, TC_ACT_OK) << "lossless frame " << i;
    EXPECT_EQ(run(udp_frame(1000), kLo, 0, kBuffer).action, kQueueDrop) << "a lossy frame";
    EXPECT_EQ(counters().drop_queue, 1u);
    EXPECT_EQ(counters().lossless_packets, 10u);
    set(*pfc);
    EXPECT_TRUE(shaper_->reset_state(kLo));
    return t0;
  }
};

TEST_F(PfcTest, APausedBufferHoldsTheLosslessClassUntilXonAndNotTheOthers) {
  const ShapePort port = pfc_port();
  const uint64_t t0 = fill_far_buffer(port);
  // The buffer is over Xoff: a lossless frame waits until it has drained to Xon (7 of its 10
  // frames gone, 56 ms, to a slot of 8 ms), then takes its own 8 ms.
  const Verdict held = run(roce_frame(1000));
  ASSERT_EQ(held.action, TC_ACT_OK);
  EXPECT_GE(held.tstamp, t0 + 48'000'000 + 8'000'000);
  EXPECT_LE(held.tstamp, t0 + 72'000'000 + 8'000'000);
  // Other classes keep the link: a lossy frame leaves after its own 8 ms.
  const uint64_t before = mono_ns();
  const Verdict lossy = run(udp_frame(1000));
  ASSERT_EQ(lossy.action, TC_ACT_OK);
  EXPECT_LE(lossy.tstamp, mono_ns() + 8'000'000);
  EXPECT_GE(lossy.tstamp, before + 8'000'000);
  // The next lossless frame queues behind the held one, in order; the pause is one XOFF.
  const Verdict next = run(roce_frame(1000));
  EXPECT_EQ(next.tstamp, held.tstamp + 8'000'000);
  const LinkCounters c = counters();
  EXPECT_EQ(c.pause_events, 1u);
  EXPECT_GE(c.pause_ns, 40'000'000u);
  EXPECT_LE(c.pause_ns, 72'000'000u);
  EXPECT_EQ(c.lossless_packets, 10u + 2u);  // the fill's ten, then these two
  EXPECT_EQ(c.drops(), 1u);                 // the fill's lossy frame
}

TEST_F(PfcTest, ADynamicXoffPausesAtTheSharedBuffersThresholdAndResumesAsItRises) {
  // xoff: dynamic with a 12000-byte shared buffer at the far switch, alpha 1, xon_offset 2000,
  // in the buffer's 8 ms slots. The fill puts 10000 bytes in the port's buffer and the switch's:
  // Xoff is 1 x (12000 - 10000) = 2000, passed. With r bytes left in both, the pause ends when
  // r <= (12000 - r) - 2000, r <= 5000: 5 frames gone, 40 ms (a static Xon of 3000: 56 ms).
  ShapePort port = pfc_port();
  port.shape.pfc = PfcShape{kPfcXoffDynamic, 2000, 0};
  port.pfc_buffer = SharedBufferParams{9, 12'000, 1, 8'000'000};
  EXPECT_EQ(to_cfg(port).pfc_slot_ns, 8'000'000u);
  const uint64_t t0 = fill_far_buffer(port, 9);
  auto occ = shaper_->buffer(9);
  ASSERT_TRUE(occ) << occ.error().what();
  EXPECT_EQ(occ->used, 10'000u);
  const Verdict held = run(roce_frame(1000));
  ASSERT_EQ(held.action, TC_ACT_OK);
  EXPECT_GE(held.tstamp, t0 + 32'000'000 + 8'000'000);
  EXPECT_LE(held.tstamp, t0 + 48'000'000 + 8'000'000);
  EXPECT_EQ(counters().pause_events, 1u);
}

TEST_F(PfcTest, ThePauseLastsFromXoffDownToXon) {
  const ShapePort port = pfc_port();
  const uint64_t t0 = fill_far_buffer(port);
  // ~28 ms on, 6-7 frames are left (6000-7000 bytes): under Xoff, but the pause holds until Xon.
  std::this_thread::sleep_until(
      std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t0 + 28'000'000)));
  if (mono_ns() < t0 + 40'000'000) {  // a slow machine overslept: nothing left to see
    const Verdict v = run(roce_frame(1000));
    EXPECT_GE(v.tstamp, t0 + 48'000'000 + 8'000'000) << "released above Xon";
  }
  // After 80 ms the buffer is empty: no pause.
  std::this_thread::sleep_until(
      std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t0 + 90'000'000)));
  EXPECT_TRUE(shaper_->reset_state(kLo));
  const uint64_t before = mono_ns();
  const Verdict free = run(roce_frame(1000));
  EXPECT_LE(free.tstamp, mono_ns() + 8'000'000);
  EXPECT_GE(free.tstamp, before + 8'000'000);
}

TEST_F(PfcTest, TheWatchdogDropsAClassPausedTooLong) {
  const ShapePort port = pfc_port(/*watchdog_ns=*/20'000'000);
  fill_far_buffer(port);
  // The pause would last ~56 ms, more than the watchdog's 20: the class is dropped, the
  // others not.
  EXPECT_EQ(run(roce_frame(1000)).action, kWireDrop);
  EXPECT_EQ(run(roce_frame(1000)).action, kWireDrop);
  EXPECT_EQ(run(udp_frame(1000)).action, TC_ACT_OK);
  const LinkCounters c = counters();
  EXPECT_EQ(c.drop_watchdog, 2u);
  EXPECT_EQ(c.drop_queue, 1u);  // the fill's lossy frame
}

TEST_F(PfcTest, PfcOffForgetsTheBuffer) {
  ShapePort port = pfc_port();
  ASSERT_TRUE(shaper_->set(port));
  port.shape.pfc = PfcShape{};
  port.pfc_peer = 0;
  ASSERT_TRUE(shaper_->set(port));
  auto cfg = shaper_->get(kLo);
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->pfc_peer, 0u);
  EXPECT_EQ(cfg->pfc_xoff_bytes, 0u);
  // With no buffer behind it, a lossless frame is not held.
  const uint64_t before = mono_ns();
  const Verdict v = run(roce_frame(1000));
  EXPECT_GE(v.tstamp, before + 8'000'000);
  EXPECT_LE(v.tstamp, mono_ns() + 8'000'000);
}

TEST_F(ShaperTest, DeparturesAreSpacedBySerializationTimePlusDelay) {
  // 1000-byte frames at 100 kbit/s: 80 ms each, so a backlog stays however slow the test runs.
  set(unqueued(100'000, 50'000));
  expect_departures(100'000, 50'000, 1000, 0, 10);
}

TEST_F(ShaperTest, RatesFrom1KbitTo400GbitDoNotOverflow) {
  set(unqueued(1'000));  // 1500 bytes at 1 kbit/s: 12 s per frame
  expect_departures(1'000, 0, 1500, 0, 4);
  // 400 Gbit/s serializes a frame in tens of ns, faster than test runs follow each other; a
  // large per-frame overhead makes the backlog that shows the arithmetic: 320 us a frame (the
  // program counts at most 16 MiB a frame), so a slow emulated CPU (the VM lane, where 80 us
  // was once not enough) still finds the link busy.
  fabemu_link_cfg cfg = unqueued(400'000'000'000ull, 2'000);
  cfg.overhead_bytes = 16'000'000;
  ASSERT_TRUE(shaper_->remove(kLo));  // forget the 1 kbit/s backlog
  set(cfg);
  expect_departures(400'000'000'000ull, 2'000, 1500, 16'000'000, 10, 3, &cfg);
  // A rate that does not divide 8e9: the remainder is carried, so no drift accumulates.
  ASSERT_TRUE(shaper_->remove(kLo));
  cfg = unqueued(3'000'000'000ull);
  cfg.overhead_bytes = 10'000'000;
  set(cfg);
  expect_departures(3'000'000'000ull, 0, 1000, 10'000'000, 20);  // 26669333.3 ns each
}

TEST_F(ShaperTest, At400GbitAnIdleLinkAdds30nsPerFrame) {
  LinkShape s;
  s.rate_bps = 400'000'000'000ull;
  set(to_cfg(s, 1, false));
  for (int i = 0; i < 100; ++i) {
    uint64_t before = mono_ns();
    Verdict v = run(udp_frame(1500));
    uint64_t after = mono_ns();
    ASSERT_EQ(v.action, TC_ACT_OK);
    EXPECT_GE(v.tstamp, before + 30);  // 1500 * 8 / 400e9 s
    EXPECT_LE(v.tstamp, after + 30 * (i + 1));
  }
}

// fabric.gso: a super-frame is its frames on the wire, each with the headers again, counted as
// frames. A host's own leaves when all of it is serialized; a forwarded one came in as frames at
// the rate of the link it came in over, the last just now, and the port sent each on as it came:
// on an idle port it leaves one frame's time after the last came in.
TEST_F(ShaperTest, AGsoSuperFrameIsItsFramesAndAForwardedOneIsSentOnAsItCame) {
  constexpr uint32_t kIn = 4001, kSegs = 10, kPayload = 300, kHeaders = 14 + 20 + 8;
  constexpr uint64_t kNsPerByte = 8000;  // 1 Mbit/s: milliseconds a super-frame
  set(unqueued(1'000'000));
  set(unqueued(1'000'000), kIn);
  const auto frame = udp_frame(kHeaders + kSegs * kPayload);
  const uint64_t wire = kSegs * (kHeaders + kPayload), last = kHeaders + kPayload;

  uint64_t before = mono_ns();
  Verdict own = run(frame, kLo, 0, 0, kSegs, kPayload);
  uint64_t after = mono_ns();
  ASSERT_EQ(own.action, TC_ACT_OK);
  EXPECT_GE(own.tstamp, before + wire * kNsPerByte);
  EXPECT_LE(own.tstamp, after + wire * kNsPerByte);
  LinkCounters c = counters();
  EXPECT_EQ(c.packets, kSegs);
  EXPECT_EQ(c.bytes, wire);

  ASSERT_TRUE(shaper_->remove(kLo));  // an idle port again
  set(unqueued(1'000'000));
  before = mono_ns();
  Verdict fwd = run(frame, kLo, 0, kIn, kSegs, kPayload);
  after = mono_ns();
  ASSERT_EQ(fwd.action, TC_ACT_OK);
  EXPECT_GE(fwd.tstamp, before + last * kNsPerByte);
  EXPECT_LE(fwd.tstamp, after + last * kNsPerByte);
  // The next one right behind: the port is busy until then, and sends all of it after.
  Verdict next = run(frame, kLo, 0, kIn, kSegs, kPayload);
  ASSERT_EQ(next.action, TC_ACT_OK);
  EXPECT_EQ(next.tstamp - fwd.tstamp, wire * kNsPerByte);
  EXPECT_EQ(counters().packets, 2 * kSegs);
}

TEST_F(ShaperTest, QueueLimitTailDrops) {
  // 10 kbit/s: 0.8 s per 1000-byte frame; frame k waits ~0.8k s, so a 2 s limit keeps 3 (with
  // 0.4 s to spare for a slow machine).
  LinkShape s;
  s.rate_bps = 10'000;
  s.queue_ns = 2'000'000'000;
  set(to_cfg(s, 1, false));
  std::vector<int> actions;
  for (int i = 0; i < 6; ++i) actions.push_back(run(udp_frame(1000)).action);
  EXPECT_EQ(actions, (std::vector<int>{TC_ACT_OK, TC_ACT_OK, TC_ACT_OK, kQueueDrop, kQueueDrop,
                                       kQueueDrop}));
  LinkCounters c = counters();
  EXPECT_EQ(c.packets, 3u);
  EXPECT_EQ(c.drop_queue, 3u);
  EXPECT_EQ(c.bytes, 3000u);
  uint64_t in_hist = 0;
  for (uint64_t n : c.queue_delay_hist) in_hist += n;
  EXPECT_EQ(in_hist, c.packets);
  EXPECT_EQ(c.queue_delay_hist[FABEMU_HIST_BUCKETS - 1], 2u);  // 0.8 and 1.6 s waits

  // A byte limit: 2500 bytes hold the frame being sent and one more (backlog + frame > limit).
  ASSERT_TRUE(shaper_->remove(kLo));
  s.queue_ns.reset();
  s.queue_bytes = 2500;
  set(to_cfg(s, 1, false));
  actions.clear();
  for (int i = 0; i < 4; ++i) actions.push_back(run(udp_frame(1000)).action);
  EXPECT_EQ(actions, (std::vector<int>{TC_ACT_OK, TC_ACT_OK, kQueueDrop, kQueueDrop}));
}

TEST_F(ShaperTest, MarksCeAboveTheThreshold) {
  // 0.8 s per frame: waits 0, 0.8, 1.6, 2.4 s against a 1.2 s threshold.
  LinkShape s;
  s.rate_bps = 10'000;
  s.ecn_threshold_ns = 1'200'000'000;
  s.queue_ns = 10'000'000'000ull;
  set(to_cfg(s, 1, false));
  std::vector<int> ecn;
  for (int i = 0; i < 4; ++i) {
    Verdict v = run(udp_frame(1000));
    ASSERT_EQ(v.action, TC_ACT_OK);
    ASSERT_GE(v.frame.size(), 34u);
    ecn.push_back(v.frame[15] & 3);
    EXPECT_EQ(ip_checksum(v.frame.data() + 14, 20), 0) << "IPv4 checksum after marking";
  }
  EXPECT_EQ(ecn, (std::vector<int>{2, 2, 3, 3}));
  // Not-ECT traffic is never marked, and not counted.
  Verdict plain = run(udp_frame(1000, 0));
  EXPECT_EQ(plain.frame[15] & 3, 0);
  EXPECT_EQ(counters().ce_marks, 2u);
}

TEST_F(ShaperTest, RedMarksWithAProbabilityRisingFromKminToKmax) {
  // 100-byte frames at 10 kbit/s: frame i finds a backlog of 100 i bytes (80 ms each). RED from
  // kmin 1000 to kmax 101000 bytes with pmax 50%: frames 0-10 are never marked, frame i in
  // 11..1010 with p = 50% (100 i - 1000) / 100000, the rest always.
  LinkShape s;
  s.rate_bps = 10'000;
  s.ecn = RedEcn{1000, 101'000, 0.5};
  fabemu_link_cfg cfg = to_cfg(s, 7, false);
  cfg.queue_ns = 0;  // a backlog of any length
  set(cfg);
  const auto frame = udp_frame(100);
  int below = 0, between = 0, above = 0;
  double mean = 0, var = 0;
  for (int i = 0; i < 1100; ++i) {
    Verdict v = run(frame);
    ASSERT_EQ(v.action, TC_ACT_OK);
    const bool ce = (v.frame[15] & 3) == 3;
    if (i <= 10) {
      below += ce;
    } else if (i <= 1010) {
      between += ce;
      const double p = 0.5 * (100.0 * i - 1000) / 100'000;
      mean += p;
      var += p * (1 - p);
    } else {
      above += ce;
    }
  }
  EXPECT_EQ(below, 0);
  EXPECT_EQ(above, 89);
  EXPECT_NEAR(between, mean, 4.5 * std::sqrt(var)) << "expected " << mean;  // ~250 +- 58
  EXPECT_EQ(counters().ce_marks, uint64_t(between + above));
  // Not-ECT frames are not marked at any backlog.
  EXPECT_EQ(run(udp_frame(100, 0)).frame[15] & 3, 0);
}

TEST_F(ShaperTest, LossRepeatsForASeedAndDiffersForAnother) {
  LinkShape s;
  s.loss = 0.1;
  set(to_cfg(s, 1234, false));
  const int n = 10'000;
  std::vector<bool> a = drops(n);
  set(to_cfg(s, 99, false));  // a new seed restarts the sequence from that seed
  std::vector<bool> b = drops(n);
  set(to_cfg(s, 1234, false));
  std::vector<bool> a2 = drops(n);
  EXPECT_EQ(a, a2);
  EXPECT_NE(a, b);
  ASSERT_TRUE(shaper_->reset_state(kLo));  // a reset restarts from the configured seed too
  EXPECT_EQ(drops(n), a);

  // 99% binomial interval for p = 0.1, n = 10000: 1000 +- 2.576 * sqrt(900) = +-77.3.
  for (const auto* seq : {&a, &b}) {
    long dropped = std::count(seq->begin(), seq->end(), true);
    EXPECT_NEAR(double(dropped), 1000.0, 77.3);
  }
  EXPECT_EQ(counters().drop_loss, uint64_t(3 * std::count(a.begin(), a.end(), true) +
                                           std::count(b.begin(), b.end(), true)));
}

TEST_F(ShaperTest, GilbertElliottLossComesInBursts) {
  fabemu_link_cfg cfg = to_cfg(LinkShape{}, 5, false);
  set_gilbert_elliott(cfg, {.p = 0.01, .r = 0.2, .loss_bad = 1, .loss_good = 0});
  set(cfg);
  std::vector<bool> d = drops(20'000);
  long lost = std::count(d.begin(), d.end(), true);
  long bursts = 0;
  for (size_t i = 0; i < d.size(); ++i) bursts += d[i] && (i == 0 || !d[i - 1]);
  // Stationary loss p/(p+r) = 4.8%; bursts average 1/r = 5 packets.
  EXPECT_NEAR(double(lost) / double(d.size()), 0.01 / 0.21, 0.015);
  ASSERT_GT(bursts, 0);
  EXPECT_NEAR(double(lost) / double(bursts), 5.0, 1.5);
}

TEST_F(ShaperTest, DownDropsEverything) {
  LinkShape s;
  s.down = true;
  set(to_cfg(s, 1, false));
  std::vector<bool> d = drops(100);
  EXPECT_EQ(std::count(d.begin(), d.end(), false), 0);
  LinkCounters c = counters();
  EXPECT_EQ(c.drop_down, 100u);
  EXPECT_EQ(c.packets, 0u);
  s.down = false;  // up again, live
  set(to_cfg(s, 1, false));
  EXPECT_EQ(run(udp_frame(100)).action, TC_ACT_OK);
}

TEST_F(ShaperTest, PortWithoutConfigPassesUntouched) {
  std::vector<uint8_t> frame = udp_frame(300);
  Verdict v = run(frame, kLo, 12345);
  EXPECT_EQ(v.action, TC_ACT_OK);
  EXPECT_EQ(v.tstamp, 12345u);
  EXPECT_EQ(v.frame, frame);
  EXPECT_FALSE(shaper_->counters(kLo));
}

TEST_F(ShaperTest, JitterStaysInItsWindowAndNoReorderKeepsOrder) {
  LinkShape s;
  s.delay_ns = 1'000'000;
  s.jitter_ns = 500'000;
  for (bool reorder : {true, false}) {
    s.reorder = reorder;
    set(to_cfg(s, 3, false));
    uint64_t last = 0;
    int reordered = 0;
    for (int i = 0; i < 300; ++i) {
      uint64_t before = mono_ns();
      Verdict v = run(udp_frame(200));
      uint64_t after = mono_ns();
      if (reorder) {
        EXPECT_GE(v.tstamp, before + 500'000);
        EXPECT_LE(v.tstamp, after + 1'500'000);
      }
      reordered += v.tstamp < last;
      last = v.tstamp;
    }
    if (reorder) {
      EXPECT_GT(reordered, 0) << "+-0.5 ms jitter on frames microseconds apart";
    } else {
      EXPECT_EQ(reordered, 0);
    }
  }
}

TEST_F(ShaperTest, PolicerDropsAndMarksButNeverDelays) {
  LinkShape s;
  s.rate_bps = 10'000;
  s.delay_ns = 5'000'000;
  s.queue_ns = 2'000'000'000;
  s.ecn_threshold_ns = 1'200'000'000;
  set(to_cfg(s, 1, true));
  std::vector<int> actions;
  for (int i = 0; i < 5; ++i) {
    Verdict v = run(udp_frame(1000), kLo, 0);
    actions.push_back(v.action);
    if (v.action == TC_ACT_OK) {
      EXPECT_EQ(v.tstamp, 0u) << "a policer leaves tstamp alone";
    }
  }
  EXPECT_EQ(actions, (std::vector<int>{TC_ACT_OK, TC_ACT_OK, TC_ACT_OK, kQueueDrop, kQueueDrop}));
  LinkCounters c = counters();
  EXPECT_EQ(c.drop_queue, 2u);
  EXPECT_EQ(c.ce_marks, 1u);
}

// A bpf filesystem of the test's own, so that nothing is pinned under the host's /sys/fs/bpf.
class TempBpffs {
 public:
  TempBpffs() {
    char tmpl[] = "/tmp/fabemu-bpffs-XXXXXX";
    if (!::mkdtemp(tmpl)) return;
    dir_ = tmpl;
    auto r = ensure_bpffs(dir_);
    error_ = r ? "" : r.error().what();
  }
  ~TempBpffs() {
    if (dir_.empty()) return;
    ::umount2(dir_.c_str(), MNT_DETACH);
    ::rmdir(dir_.c_str());
  }
  const std::string& dir() const { return dir_; }
  const std::string& error() const { return error_; }

 private:
  std::string dir_, error_ = "mkdtemp failed";
};

TEST_F(ShaperTest, PinnedMapsAreSharedByEveryLoadOfALab) {
  TempBpffs fs;
  ASSERT_TRUE(fs.error().empty()) << fs.error();
  const std::string dir = lab_pin_dir("pintest", fs.dir());
  LinkShape s;
  s.rate_bps = 10'000'000'000ull;
  {
    auto a = LinkShaper::load({dir});
    ASSERT_TRUE(a) << a.error().what();
    ASSERT_TRUE(a->set(42, s, 7, true));
    auto b = LinkShaper::load({dir});  // like a later `fabemu link set`
    ASSERT_TRUE(b) << b.error().what();
    auto seen = b->get(42);
    ASSERT_TRUE(seen) << seen.error().what();
    EXPECT_EQ(seen->rate_bps, 10'000'000'000ull);
    EXPECT_EQ(seen->seed, 7u);
    s.rate_bps = 25'000'000'000ull;
    ASSERT_TRUE(b->set(42, s, 7, true));
    EXPECT_EQ(a->get(42)->rate_bps, 25'000'000'000ull);
  }
  // Both processes' worth of objects are gone; the pins keep the lab's shapes.
  EXPECT_TRUE(std::filesystem::exists(dir + "/fabemu_cfg"));
  auto c = LinkShaper::load({dir});
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->get(42)->rate_bps, 25'000'000'000ull);
  EXPECT_EQ(*c->shaped(), std::vector<uint32_t>{42});
  ASSERT_TRUE(c->counters(42));  // created with the shape, zero until traffic
  ASSERT_TRUE(remove_pin_dir(dir));
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_FALSE(std::filesystem::exists(fs.dir() + "/fabemu"));
}

// Runs f on a thread inside the namespace behind `ns_fd`.
template <typename F>
void in_ns(int ns_fd, F&& f) {
  std::thread t([&] {
    auto r = enter_namespace(ns_fd, CLONE_NEWNET, "test namespace");
    ASSERT_TRUE(r) << r.error().what();
    f();
  });
  t.join();
}

// Two fresh namespaces, a and b, joined by a veth a0 (10.77.0.1/24) <-> b0 (10.77.0.2/24).
class VethTest : public ShaperTest {
 protected:
  void SetUp() override {
    ShaperTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    char tmpl[] = "/tmp/fabemu-shaper-XXXXXX";
    ASSERT_TRUE(::mkdtemp(tmpl));
    dir_ = tmpl;
    for (auto [path, fd] : {std::pair{&ns_a_, &fd_a_}, {&ns_b_, &fd_b_}}) {
      *path = dir_ + (path == &ns_a_ ? "/a" : "/b");
      std::thread t([&, path = path, fd = fd] {
        auto made = create_pinned_namespace(*path, "", "");
        ASSERT_TRUE(made) << made.error().what();
        *fd = std::move(*made);
      });
      t.join();
      ASSERT_TRUE(fd->valid());
    }
    auto rtnl = NetlinkSocket::open(NETLINK_ROUTE, std::chrono::seconds(5));
    ASSERT_TRUE(rtnl) << rtnl.error().what();
    auto veth = create_veth_pair(*rtnl, {fd_a_.get(), "a0"}, {fd_b_.get(), "b0"}, 1500, 0);
    ASSERT_TRUE(veth) << veth.error().what();
    for (auto [fd, name, ip, index] : {std::tuple{fd_a_.get(), "a0", 0x0a4d0001u, &ifindex_a_},
                                       {fd_b_.get(), "b0", 0x0a4d0002u, &ifindex_b_}}) {
      in_ns(fd, [&, name = name, ip = ip, index = index] {
        *index = ::if_nametoindex(name);
        ASSERT_NE(*index, 0u) << name;
        auto sock = RtnlSocket::open();
        ASSERT_TRUE(sock) << sock.error().what();
        ASSERT_TRUE(sock->add_address(int(*index), Prefix{Ipv4{ip}, 24}, name));
        ASSERT_TRUE(sock->set_up(int(*index), name));
      });
    }
  }
  void TearDown() override {
    fd_a_.reset();
    fd_b_.reset();
    for (const std::string& p : {ns_a_, ns_b_}) {
      if (!p.empty()) {
        EXPECT_TRUE(unpin_namespace(p));
      }
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string dir_, ns_a_, ns_b_;
  UniqueFd fd_a_, fd_b_;
  unsigned ifindex_a_ = 0, ifindex_b_ = 0;
};

// Our filter on the egress of `ifindex` in the caller's namespace: its program id, or 0.
// The program at the egress of `ifindex` in the caller's namespace, by tcx or clsact; 0: none.
uint32_t attached_prog(unsigned ifindex) {
  uint32_t ids[4] = {}, count = 4, flags = 0;
  const auto tcx = static_cast<bpf_attach_type>(kBpfTcxEgress);
  if (bpf_prog_query(int(ifindex), tcx, 0, &flags, ids, &count) == 0 && count > 0) return ids[0];
  bpf_tc_hook hook{};
  hook.sz = sizeof(hook);
  hook.ifindex = int(ifindex);
  hook.attach_point = BPF_TC_EGRESS;
  bpf_tc_opts opts{};
  opts.sz = sizeof(opts);
  opts.handle = 0xfabe;
  opts.priority = 1;
  // No filter is a normal answer here; keep libbpf from logging the kernel's complaint.
  libbpf_print_fn_t old = libbpf_set_print(nullptr);
  int err = bpf_tc_query(&hook, &opts);
  libbpf_set_print(old);
  return err == 0 ? opts.prog_id : 0;
}

uint32_t prog_id(int fd) {
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

// Whether this kernel attaches by tcx, tried on a veth of the fixture.
bool kernel_has_tcx(LinkShaper& shaper, const std::string& ns) {
  auto a = shaper.attach(ns, "a0", AttachMethod::Tcx);
  return static_cast<bool>(a);
}

class VethAttachTest : public VethTest, public ::testing::WithParamInterface<AttachMethod> {};

TEST_P(VethAttachTest, AttachmentDetachesWhenDestroyedAndStaysWhenReleased) {
  const AttachMethod method = GetParam();
  if (method == AttachMethod::Tcx && !kernel_has_tcx(*shaper_, ns_a_))
    GTEST_SKIP() << "no tcx on this kernel (< 6.6): clsact is used instead";
  const uint32_t id = prog_id(shaper_->prog_fd());
  {
    auto a = shaper_->attach(ns_a_, "a0", method);
    ASSERT_TRUE(a) << a.error().what();
    EXPECT_EQ(a->method(), method);
    ASSERT_TRUE(a) << a.error().what();
    EXPECT_EQ(a->ifindex(), ifindex_a_);
    in_ns(fd_a_.get(), [&] { EXPECT_EQ(attached_prog(ifindex_a_), id); });
    ASSERT_EQ(shaper_->ports()->size(), 1u);
    EXPECT_EQ(shaper_->ports()->front().ifname, "a0");
  }
  in_ns(fd_a_.get(), [&] { EXPECT_EQ(attached_prog(ifindex_a_), 0u); });
  EXPECT_TRUE(shaper_->ports()->empty());

  auto kept = shaper_->attach(ns_a_, "a0", method);
  ASSERT_TRUE(kept) << kept.error().what();
  kept->release();  // a lab's hooks outlive the process; the namespace takes them along
  kept = make_error("gone");
  in_ns(fd_a_.get(), [&] { EXPECT_EQ(attached_prog(ifindex_a_), id); });
}

INSTANTIATE_TEST_SUITE_P(Methods, VethAttachTest,
                         ::testing::Values(AttachMethod::Tcx, AttachMethod::Clsact),
                         [](const auto& info) {
                           return info.param == AttachMethod::Tcx ? "Tcx" : "Clsact";
                         });

TEST_F(VethTest, RefusesAPortWhoseIfindexAnotherNamespaceHolds) {
  ASSERT_EQ(ifindex_a_, ifindex_b_) << "fresh namespaces number their first device alike";
  auto a = shaper_->attach(ns_a_, "a0");
  ASSERT_TRUE(a) << a.error().what();
  auto b = shaper_->attach(ns_b_, "b0");
  ASSERT_FALSE(b);
  EXPECT_EQ(errno_of(b.error()), EEXIST);
  EXPECT_NE(b.error().message.find("lab-unique ifindexes"), std::string::npos) << b.error().what();
  in_ns(fd_b_.get(), [&] { EXPECT_EQ(attached_prog(ifindex_b_), 0u); });
}

// Counts the UDP datagrams that reach b (10.77.0.2:9000), on a thread inside b, and notes
// when the first one arrived; stops when destroyed.
class UdpSink {
 public:
  explicit UdpSink(int ns_fd) {
    thread_ = std::thread([this, ns_fd] {
      in_ns(ns_fd, [&] {
        UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        sockaddr_in addr{AF_INET, htons(9000), {htonl(0x0a4d0002)}, {}};
        ASSERT_EQ(::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
        timeval tv{0, 20'000};
        ::setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        ready_ = true;
        char buf[2048];
        while (!stop_)
          if (::recv(sock.get(), buf, sizeof(buf), 0) > 0 && received_++ == 0)
            first_ns_ = std::chrono::steady_clock::now().time_since_epoch().count();
      });
      ready_ = true;  // also when the namespace could not be entered: do not hang the sender
    });
    while (!ready_) std::this_thread::sleep_for(1ms);
  }
  ~UdpSink() {
    stop_ = true;
    thread_.join();
  }
  uint64_t received() const { return received_; }
  int64_t first_arrival_ns() const { return first_ns_; }

 private:
  std::atomic<bool> ready_{false}, stop_{false};
  std::atomic<uint64_t> received_{0};
  std::atomic<int64_t> first_ns_{0};
  std::thread thread_;
};

struct Sent {
  double seconds = 0;
  int64_t start_ns = 0;  // steady clock
};

// Sends 1400-byte datagrams from a to b:9000 for `duration` (or `count` of them).
Sent send_udp(int ns_fd, std::chrono::milliseconds duration, uint64_t count = UINT64_MAX) {
  Sent sent;
  in_ns(ns_fd, [&] {
    UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{AF_INET, htons(9000), {htonl(0x0a4d0002)}, {}};
    ASSERT_EQ(::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    char payload[1400] = {};
    auto start = std::chrono::steady_clock::now();
    sent.start_ns = start.time_since_epoch().count();
    for (uint64_t i = 0; i < count && std::chrono::steady_clock::now() - start < duration; ++i)
      ::send(sock.get(), payload, sizeof(payload), 0);  // policer drops look like success
    sent.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  return sent;
}

TEST_F(VethTest, PolicerCapsUdpBetweenNamespacesAndDownDropsLive) {
  auto a = shaper_->attach(ns_a_, "a0");
  ASSERT_TRUE(a) << a.error().what();
  constexpr uint64_t kRate = 50'000'000, kQueueNs = 2'000'000;
  LinkShape s;
  s.rate_bps = kRate;
  s.queue_ns = kQueueNs;
  ASSERT_TRUE(shaper_->set(a->ifindex(), s, 1, /*policer=*/true));

  UdpSink sink(fd_b_.get());
  const double seconds = send_udp(fd_a_.get(), 1s).seconds;
  std::this_thread::sleep_for(200ms);  // whatever passed the policer has arrived by now
  const uint64_t delivered = sink.received();

  // A policer passes the rate over the sending time plus the queue's worth of burst (ARP and
  // IPv6 neighbour traffic take from the same budget). 1442 wire bytes per 1400-byte datagram.
  const double wire_bits = double(delivered) * 1442 * 8;
  const double allowed = double(kRate) * (seconds + double(kQueueNs) * 1e-9) + 1442 * 8;
  EXPECT_GT(delivered, 0u);
  EXPECT_LE(wire_bits, allowed * 1.01) << delivered << " datagrams in " << seconds << " s";
  auto c = shaper_->counters(a->ifindex());
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_GT(c->drop_queue, 0u) << "the sender offered more than 50 Mbit/s";
  EXPECT_GE(c->packets, delivered);
  std::printf("policed to 50 Mbit/s: %.1f Mbit/s delivered, %lu passed, %lu dropped\n",
              wire_bits / seconds / 1e6, (unsigned long)c->packets, (unsigned long)c->drop_queue);

  // Down, live, without re-attaching: nothing gets through.
  s.down = true;
  ASSERT_TRUE(shaper_->set(a->ifindex(), s, 1, true));
  send_udp(fd_a_.get(), 5s, 100);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(sink.received(), delivered);
  EXPECT_GE(shaper_->counters(a->ifindex())->drop_down, 100u);
}

// Runs argv (a path and its arguments) to completion; its exit status, or -1.
int run_argv(const std::vector<std::string>& argv) {
  auto r = run_captured(argv);
  return r ? r->status : -1;
}

// With fq as the root qdisc the shaper's departure times are the link: the rate caps what
// arrives (without fq honouring skb->tstamp everything offered would), and every packet is
// held back by the configured delay. Runs where the kernel has sch_fq (the VM lane).
TEST_F(VethTest, FqHonoursTheShapersDepartureTimes) {
  std::optional<std::string> no_fq;
  for (const FeatureProbe& p : probe_features())
    if (p.id == "sch_fq" && p.status != ProbeStatus::Yes) no_fq = p.detail;
  if (no_fq) GTEST_SKIP() << "no fq qdisc on this kernel: " << *no_fq;

  auto a = shaper_->attach(ns_a_, "a0");
  ASSERT_TRUE(a) << a.error().what();
  ASSERT_EQ(run_argv({"/usr/bin/nsenter", "--net=" + ns_a_, "/usr/sbin/tc", "qdisc", "replace",
                      "dev", "a0", "root", "fq", "horizon", "10s"}),
            0);
  constexpr uint64_t kRate = 20'000'000, kDelayNs = 5'000'000;
  LinkShape s;
  s.rate_bps = kRate;
  s.delay_ns = kDelayNs;
  s.queue_ns = 50'000'000;
  ASSERT_TRUE(shaper_->set(a->ifindex(), s, 1, /*policer=*/false));

  UdpSink sink(fd_b_.get());
  const Sent sent = send_udp(fd_a_.get(), 1s);
  const double seconds = sent.seconds;
  std::this_thread::sleep_for(200ms);  // the queue (50 ms) and the delay drain
  const uint64_t delivered = sink.received();
  const int64_t first_ns = sink.first_arrival_ns() - sent.start_ns;
  const double wire_bits = double(delivered) * 1442 * 8;
  const double allowed = double(kRate) * (seconds + 0.05 + 0.2) + 1442 * 8;
  EXPECT_GT(delivered, 0u);
  EXPECT_LE(wire_bits, allowed) << "fq let " << delivered << " datagrams through in " << seconds
                                << " s: it did not honour the departure times";
  EXPECT_GE(first_ns, int64_t(kDelayNs))
      << "the first datagram arrived before the configured delay";
  std::printf("fq + EDT at 20 Mbit/s, 5 ms: %.1f Mbit/s over %.2f s, first arrival after %.2f ms\n",
              wire_bits / seconds / 1e6, seconds, first_ns / 1e6);
}

// --- DCQCN (ebpf/dcqcn.bpf.h): the reaction point's pacing, the notification point's CNPs.

// A RoCEv2 frame (UDP to 4791) from 10.0.0.1 to 10.0.0.2 whose BTH has `opcode` and names
// destination QP `qpn`, with ECN `ecn`; `reply`: from 10.0.0.2 to 10.0.0.1.
std::vector<uint8_t> bth_frame(size_t size, uint8_t opcode, uint32_t qpn, uint8_t ecn,
                               bool reply = false) {
  std::vector<uint8_t> f = roce_frame(size);
  uint8_t* ip = f.data() + sizeof(ethhdr);
  ip[1] = ecn;
  if (reply) {
    for (int i = 0; i < 4; ++i) std::swap(ip[12 + i], ip[16 + i]);
  }
  ip[10] = ip[11] = 0;
  const uint16_t sum = htons(ip_checksum(ip, 20));
  std::memcpy(ip + 10, &sum, 2);
  uint8_t* bth = ip + 20 + 8;
  std::memset(bth, 0, 12);
  bth[0] = opcode;
  bth[5] = uint8_t(qpn >> 16);
  bth[6] = uint8_t(qpn >> 8);
  bth[7] = uint8_t(qpn);
  return f;
}

// HPCC's ns-3 defaults (ebpf/dcqcn.h) on a link of `line` bit/s; the rate increase timer `rp`.
fabemu_dcqcn_cfg dcqcn_cfg(uint64_t line, uint64_t rp_timer_ns = 300'000) {
  fabemu_dcqcn_cfg c{};
  c.line_bps = line;
  c.min_bps = line / 100;
  c.ai_bps = line / 5000;
  c.hai_bps = line / 500;
  c.alpha_ns = 1'000;
  c.decrease_ns = 4'000;
  c.rp_timer_ns = rp_timer_ns;
  c.cnp_interval_ns = 50'000;
  c.g = FABEMU_DCQCN_ONE / 256;
  c.fast_recovery = 1;
  return c;
}

TEST_F(ShaperTest, DcqcnPacesAQpAtItsRateAfterACnpAndMakesItsFramesEct) {
  constexpr uint64_t kLine = 1'000'000;  // 1000-byte frames: 8 ms each
  LinkShape s;
  s.rate_bps = kLine;
  fabemu_link_cfg cfg = to_cfg(s, 1, false);
  cfg.queue_ns = 0;
  cfg.flags |= FABEMU_LINK_DCQCN;
  set(cfg);
  ASSERT_TRUE(shaper_->set_dcqcn(kLo, dcqcn_cfg(kLine, 10'000'000'000ull)));
  const auto data = bth_frame(1000, 0x04 /* SEND_ONLY */, 0x123, 0 /* Not-ECT */);

  // Before any CNP: the line rate, and the frames leave ECT(0) with a valid IPv4 checksum.
  std::vector<uint64_t> at;
  for (int i = 0; i < 3; ++i) {
    Verdict v = run(data);
    ASSERT_EQ(v.action, TC_ACT_OK);
    EXPECT_EQ(v.frame[15] & 3, 2);
    EXPECT_EQ(ip_checksum(v.frame.data() + 14, 20), 0);
    at.push_back(v.tstamp);
  }
  EXPECT_EQ(at[1] - at[0], 8'000'000u);
  EXPECT_EQ(at[2] - at[1], 8'000'000u);

  // A CNP for the QP (from its peer, naming the QP its frames carry): the NIC takes it.
  const Verdict cnp = run_prog(shaper_->roce_prog_fd(), bth_frame(74, 0x81, 0x123, 0, true));
  EXPECT_EQ(cnp.action, TC_ACT_SHOT);
  auto counters = shaper_->dcqcn_counters(kLo);
  ASSERT_TRUE(counters) << counters.error().what();
  EXPECT_EQ(counters->cnps_received, 1u);

  // After the decrease check (4 us later) the QP sends at Rc = line (1 - alpha / 2), and its
  // frames leave that far apart (the link's own turn is shorter).
  std::this_thread::sleep_for(2ms);
  auto qps = shaper_->dcqcn_qps();
  ASSERT_TRUE(qps) << qps.error().what();
  ASSERT_EQ(qps->size(), 1u);
  const DcqcnQp q = qps->front();
  EXPECT_EQ(q.peer, 0x0a000002u);
  EXPECT_EQ(q.qpn, 0x123u);
  EXPECT_TRUE(q.cut);
  EXPECT_EQ(q.decreases, 1u);
  EXPECT_NEAR(double(q.rate_bps), double(kLine) * (1 - std::pow(1 - 1 / 256.0, 4) / 2), 2);
  at.clear();
  for (int i = 0; i < 3; ++i) at.push_back(run(data).tstamp);
  EXPECT_EQ(at[2] - at[1], 1000ull * 8'000'000'000ull / q.rate_bps);
  EXPECT_GT(shaper_->dcqcn_counters(kLo)->paced, 0u);
}

// The notification point at b0 (10.77.0.2) answers CE-marked RoCEv2 datagrams from a with a CNP
// to the QP they name, at most one per cnp_interval; a's reaction point takes CNPs for its QPs.
TEST_F(VethTest, ASharedBufferTakesABurstPerPortQueuesDropAndASecondPortGetsWhatIsLeft) {
  // Two ports of one switch (this namespace's lo and a0) at 80 kbit/s: a 1000-byte frame is
  // 100 ms on the wire, so a burst admitted within milliseconds is all still there (the
  // occupancy's 1 s slots count it until later, never earlier). 30000 bytes of buffer, as two
  // queues of 15000 or shared.
  const auto frame = udp_frame(1000);
  auto burst = [&](uint32_t ifindex, int frames) {
    int admitted = 0;
    in_ns(fd_a_.get(), [&] {
      for (int i = 0; i < frames; ++i) admitted += run(frame, ifindex).action == TC_ACT_OK;
    });
    return admitted;
  };
  auto shape = [&](std::optional<SharedBufferParams> buffer, uint64_t queue_bytes) {
    for (uint32_t port : {kLo, ifindex_a_}) {
      ShapePort p;
      p.ifindex = port;
      p.direction = "sw>" + std::to_string(port);
      p.shape.rate_bps = 80'000;
      if (queue_bytes) p.shape.queue_bytes = queue_bytes;
      p.buffer = buffer;
      ASSERT_TRUE(shaper_->set(p));
      ASSERT_TRUE(shaper_->reset_state(port));
    }
  };
  // Per-port queues: a burst of 20 into one port drops 5 while the other port's 15000 idle.
  shape(std::nullopt, 15'000);
  EXPECT_EQ(burst(kLo, 20), 15);

  // Shared, alpha 4: the port may hold 4 x the free buffer, 24000 of 30000 alone: no drop.
  const SharedBufferParams shared{7, 30'000, 4, 1'000'000'000};
  shape(shared, 0);
  EXPECT_EQ(burst(kLo, 20), 20);
  // A second congested port gets alpha x what the first left free: 4 x (10000 - q) >= q, 8000.
  EXPECT_EQ(burst(ifindex_a_, 20), 8);
  auto occ = shaper_->buffer(7);
  ASSERT_TRUE(occ) << occ.error().what();
  EXPECT_EQ(occ->bytes, 30'000u);
  EXPECT_EQ(occ->used, 28'000u);
  EXPECT_EQ(occ->peak, 28'000u);
  EXPECT_EQ(counters(ifindex_a_).drop_queue, 12u);
  EXPECT_EQ(counters(kLo).drop_queue, 5u);  // the per-port queue's, none since
}

TEST_F(VethTest, DcqcnNotificationPointAnswersCeWithACnpOncePerInterval) {
  fabemu_dcqcn_cfg c = dcqcn_cfg(1'000'000'000);
  c.cnp_interval_ns = 300'000'000;                 // 300 ms: the second frame is within it
  ASSERT_TRUE(shaper_->set_dcqcn(ifindex_b_, c));  // a0 has the same key: fresh namespaces
  in_ns(fd_b_.get(), [&] {
    auto r = shaper_->attach_notification_point("b0", ifindex_b_, "b");
    ASSERT_TRUE(r) << r.error().what();
  });
  // Sends one CE-marked SEND_ONLY for QP 0xabc from a:4791; what a's socket receives within
  // `wait`, if anything.
  auto exchange = [&](std::chrono::milliseconds wait) {
    std::vector<uint8_t> got;
    in_ns(fd_a_.get(), [&] {
      UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
      int one = 1, ce = 3;
      ::setsockopt(sock.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      ASSERT_EQ(::setsockopt(sock.get(), IPPROTO_IP, IP_TOS, &ce, sizeof(ce)), 0);
      sockaddr_in me{AF_INET, htons(4791), {htonl(0x0a4d0001)}, {}};
      ASSERT_EQ(::bind(sock.get(), reinterpret_cast<sockaddr*>(&me), sizeof(me)), 0);
      timeval tv{0, int(std::chrono::microseconds(wait).count())};
      ::setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      uint8_t bth[12 + 100] = {0x04, 0, 0xff, 0xff, 0, 0x00, 0x0a, 0xbc};
      sockaddr_in peer{AF_INET, htons(4791), {htonl(0x0a4d0002)}, {}};
      ASSERT_EQ(::sendto(sock.get(), bth, sizeof(bth), 0, reinterpret_cast<sockaddr*>(&peer),
                         sizeof(peer)),
                ssize_t(sizeof(bth)));
      uint8_t buf[256];
      const ssize_t n = ::recv(sock.get(), buf, sizeof(buf), 0);
      if (n > 0) got.assign(buf, buf + n);
    });
    return got;
  };
  const std::vector<uint8_t> cnp = exchange(1000ms);
  ASSERT_EQ(cnp.size(), 32u) << "a CNP: BTH, 16 reserved bytes and the ICRC";
  EXPECT_EQ(cnp[0], 0x81);
  EXPECT_EQ(cnp[4], 0x40) << "BECN";
  EXPECT_EQ(cnp[5] << 16 | cnp[6] << 8 | cnp[7], 0xabc);
  EXPECT_TRUE(exchange(200ms).empty()) << "a second CNP within the interval";
  auto n = shaper_->dcqcn_counters(ifindex_b_);
  ASSERT_TRUE(n) << n.error().what();
  EXPECT_EQ(n->ce_received, 2u);
  EXPECT_EQ(n->cnps_sent, 1u);
  EXPECT_EQ(n->cnps_held, 1u);

  // With DCQCN at a too, its NIC takes the CNP: the socket sees nothing, the QP is cut.
  in_ns(fd_a_.get(), [&] {
    auto r = shaper_->attach_notification_point("a0", ifindex_a_, "a");
    ASSERT_TRUE(r) << r.error().what();
  });
  std::this_thread::sleep_for(150ms);  // past the interval
  EXPECT_TRUE(exchange(500ms).empty()) << "the CNP reached the application";
  auto qps = shaper_->dcqcn_qps();
  ASSERT_TRUE(qps) << qps.error().what();
  ASSERT_EQ(qps->size(), 1u);
  EXPECT_EQ(qps->front().peer, 0x0a4d0002u);
  EXPECT_EQ(qps->front().qpn, 0xabcu);
  EXPECT_EQ(qps->front().cnps, 1u);
  EXPECT_EQ(shaper_->dcqcn_counters(ifindex_a_)->cnps_received, 1u);
}
}  // namespace
}  // namespace fabemu
