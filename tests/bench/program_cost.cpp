// What the link model's program costs a packet, timed by the kernel (BPF_PROG_TEST_RUN over
// --repeat runs): shaped (a rate and a loss) and on a port it does not shape. One JSON object on
// stdout; bench/program_cost.py runs it several times and prints the medians.
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "../integration/frames.h"
#include "shaping/link_shaper.h"

using namespace fabemu;

namespace {

// BPF_PROG_TEST_RUN gives the skb the loopback device of the caller's namespace for ifindex 1;
// the maps of an unpinned LinkShaper belong to this process alone: no port is touched.
constexpr uint32_t kLo = 1;

Result<uint32_t> ns_per_packet(int prog_fd, uint32_t repeat) {
  const std::vector<uint8_t> frame = udp_frame(1400);
  __sk_buff ctx{};
  ctx.ifindex = kLo;
  bpf_test_run_opts opts{};
  opts.sz = sizeof(opts);
  opts.data_in = frame.data();
  opts.data_size_in = static_cast<uint32_t>(frame.size());
  opts.ctx_in = &ctx;
  opts.ctx_size_in = sizeof(ctx);
  opts.repeat = repeat;
  if (const int err = bpf_prog_test_run_opts(prog_fd, &opts); err != 0)
    return make_error("BPF_PROG_TEST_RUN", -err);
  return opts.duration;
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t repeat = argc > 1 ? static_cast<uint32_t>(std::atol(argv[1])) : 1'000'000;
  if (::geteuid() != 0) {
    std::fprintf(stderr, "program_cost: needs root (CAP_BPF)\n");
    return 4;
  }
  auto shaper = LinkShaper::load();
  if (!shaper) {
    std::fprintf(stderr, "program_cost: %s\n", shaper.error().what().c_str());
    return 5;
  }
  LinkShape s;
  s.rate_bps = 400'000'000'000ull;
  s.loss = 0.001;
  if (auto r = shaper->set(kLo, s, 1, /*policer=*/false); !r) {
    std::fprintf(stderr, "program_cost: %s\n", r.error().what().c_str());
    return 1;
  }
  auto shaped = ns_per_packet(shaper->prog_fd(), repeat);
  if (auto r = shaper->remove(kLo); !r || !shaped) {
    std::fprintf(stderr, "program_cost: %s\n",
                 (!shaped ? shaped.error() : r.error()).what().c_str());
    return 1;
  }
  auto bare = ns_per_packet(shaper->prog_fd(), repeat);
  if (!bare) {
    std::fprintf(stderr, "program_cost: %s\n", bare.error().what().c_str());
    return 1;
  }
  std::printf("{\"repeat\": %u, \"shaped_ns\": %u, \"unshaped_ns\": %u}\n", repeat, *shaped, *bare);
  return 0;
}
