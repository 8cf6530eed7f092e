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
  std::vector<double> iteration_s;  // this rank's timed iterations
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
    if (it >= config.warmup) {
      iteration_s.push_back(std::chrono::duration<double>(end - start).count());
      timed_s += iteration_s.back();
    }

    Verification v = verify_output(l, rank, iteration, out);
    if (v.wrong > 0 && local_wrong == 0) {
      r.local = v;
      r.local_iteration = it;
    }
    local_wrong += v.wrong;
  }
  if (local_wrong > 0) r.local.wrong = local_wrong;

  // Per rank: its mean, its wrong elements, then each timed iteration's time.
  const double to_us = 1e6 / config.clock_scale;
  std::vector<double> mine = {timed_s / config.iterations * to_us,
                              static_cast<double>(local_wrong)};
  for (double s : iteration_s) mine.push_back(s * to_us);
  auto all = comm.allgather(mine);
  if (!all) return all.error().context(what + ": gathering results");
  const size_t stride = mine.size();
  r.iteration_time_us.assign(iteration_s.size(), 0);
  for (int i = 0; i < comm.size(); ++i) {
    const double* theirs = all->data() + i * stride;
    r.rank_time_us.push_back(theirs[0]);
    r.rank_wrong.push_back(static_cast<uint64_t>(theirs[1]));
    r.wrong += r.rank_wrong.back();
    for (size_t k = 0; k < iteration_s.size(); ++k)
      r.iteration_time_us[k] = std::max(r.iteration_time_us[k], theirs[2 + k]);
  }
  r.time_us = *std::max_element(r.rank_time_us.begin(), r.rank_time_us.end());
  r.wall_time_us = r.time_us * config.time_scale;
  r.algbw = gb_per_s(l.size, r.time_us / 1e6);
  r.busbw = r.algbw * bus_factor(c, l.ranks);
  return r;
}

}  // namespace fabemu::collective
