// The measurement loop.
#include "collective/benchmark.h"

#include <algorithm>
#include <chrono>

namespace fabemu::collective {

Result<SizeResult> run_size(Communicator& comm, Collective c, uint64_t requested_bytes,
                            const BenchmarkConfig& config) {
  const int rank = comm.rank();
  SizeResult r;
  r.layout = layout_of(c, requested_bytes, comm.size());
  r.algorithm = comm.algorithm(c);
  r.iterations = config.iterations;
  r.warmup = config.warmup;
  const Layout& l = r.layout;
  const std::string what = std::string(name_of(c)) + " size " + std::to_string(l.size);

  const bool in_place = comm.in_place(c);
  std::vector<float> in(in_place ? 0 : l.in_count);
  std::vector<float> out(in_place ? std::max(l.in_count, l.out_count) : l.out_count);
  auto op = comm.prepare(l, in, out);
  if (!op) return op.error().context(what);

  double timed_s = 0;
  uint64_t local_wrong = 0;
  for (int it = 0; it < config.warmup + config.iterations; ++it) {
    const uint32_t iteration = static_cast<uint32_t>(it);
    if (in_place) {
      fill_input(l, rank, iteration, out);
    } else {
      fill_input(l, rank, iteration, in);
      poison(out);
    }
    FABEMU_TRY(comm.barrier());
    const auto start = std::chrono::steady_clock::now();
    auto ran = (*op)->run();
    const auto end = std::chrono::steady_clock::now();
    if (!ran) return ran.error().context(what + " iteration " + std::to_string(it));
    if (it >= config.warmup) timed_s += std::chrono::duration<double>(end - start).count();

    Verification v = verify_output(l, rank, iteration, out);
    if (v.wrong > 0 && local_wrong == 0) {
      r.local = v;
      r.local_iteration = it;
    }
    local_wrong += v.wrong;
  }
  if (local_wrong > 0) r.local.wrong = local_wrong;

  const double mean_us = timed_s / config.iterations * 1e6 / config.clock_scale;
  const double mine[2] = {mean_us, static_cast<double>(local_wrong)};
  auto all = comm.allgather(mine);
  if (!all) return all.error().context(what + ": gathering results");
  for (int i = 0; i < comm.size(); ++i) {
    r.rank_time_us.push_back((*all)[2 * i]);
    r.rank_wrong.push_back(static_cast<uint64_t>((*all)[2 * i + 1]));
    r.wrong += r.rank_wrong.back();
  }
  r.time_us = *std::max_element(r.rank_time_us.begin(), r.rank_time_us.end());
  r.wall_time_us = r.time_us * config.time_scale;
  r.algbw = gb_per_s(l.size, r.time_us / 1e6);
  r.busbw = r.algbw * bus_factor(c, l.ranks);
  return r;
}

}  // namespace fabemu::collective
