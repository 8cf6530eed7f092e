// Input patterns and their closed-form expected outputs.
#include "collective/pattern.h"

#include <algorithm>

#include "util/prng.h"

namespace fabemu::collective {
namespace {

constexpr uint64_t kExact = uint64_t{1} << 24;  // floats hold every integer below this

// splitmix64 of (element, iteration): neighbouring elements and iterations look unrelated, so
// a shifted or stale block does not pass by accident.
uint64_t mix(uint64_t element, uint32_t iteration) {
  return splitmix64(element + uint64_t{iteration} * 0x9E3779B97F4A7C15ull);
}

// Collectives that move values without adding them carry any integer below 2^24.
float id_value(uint64_t element, uint32_t iteration) {
  return static_cast<float>(mix(element, iteration) & (kExact - 1));
}

// Reductions: input = base(element) + ((rank + element) mod 8), base in [1, max_base], so a
// sum over n ranks is at most n * (max_base + 7) < 2^24, and dropping or repeating a rank's
// contribution always changes it (every input is >= 1).
uint64_t max_base(int ranks) {
  const uint64_t n = static_cast<uint64_t>(std::max(ranks, 1));
  const uint64_t room = (kExact - 1) / n;
  return std::clamp<uint64_t>(room > 7 ? room - 7 : 1, 1, 8192);
}

uint64_t sum_base(uint64_t element, uint32_t iteration, int ranks) {
  return 1 + mix(element, iteration) % max_base(ranks);
}

float sum_input(int rank, uint64_t element, uint32_t iteration, int ranks) {
  return static_cast<float>(sum_base(element, iteration, ranks) +
                            ((static_cast<uint64_t>(rank) + element) & 7));
}

// The sum of sum_input over ranks 0..n-1, in closed form.
float sum_expected(uint64_t element, uint32_t iteration, int ranks) {
  const uint64_t n = static_cast<uint64_t>(ranks);
  uint64_t total = n * sum_base(element, iteration, ranks) + (n / 8) * 28;
  for (uint64_t k = 0; k < n % 8; ++k) total += (element + k) & 7;
  return static_cast<float>(total);
}

}  // namespace

float input_value(const Layout& l, int rank, uint64_t index, uint32_t iteration) {
  const uint64_t n = static_cast<uint64_t>(l.ranks);
  const uint64_t r = static_cast<uint64_t>(rank);
  switch (l.collective) {
    case Collective::AllReduce:
    case Collective::ReduceScatter:
      return sum_input(rank, index, iteration, l.ranks);
    case Collective::AllGather:
      return id_value(r * l.block + index, iteration);
    case Collective::AllToAll:  // element j of the block for rank d is (rank, d, j)
      return id_value(r * n * l.block + index, iteration);
    case Collective::Broadcast:
      return rank == kBroadcastRoot ? id_value(index, iteration) : kPoison;
  }
  return kPoison;
}

float expected_value(const Layout& l, int rank, uint64_t index, uint32_t iteration) {
  const uint64_t n = static_cast<uint64_t>(l.ranks);
  const uint64_t r = static_cast<uint64_t>(rank);
  switch (l.collective) {
    case Collective::AllReduce:
      return sum_expected(index, iteration, l.ranks);
    case Collective::ReduceScatter:
      return sum_expected(r * l.block + index, iteration, l.ranks);
    case Collective::AllGather:
    case Collective::Broadcast:
      return id_value(index, iteration);
    case Collective::AllToAll: {  // block s came from rank s: its (s, rank, j)
      const uint64_t s = index / l.block, j = index % l.block;
      return id_value((s * n + r) * l.block + j, iteration);
    }
  }
  return kPoison;
}

void fill_input(const Layout& l, int rank, uint32_t iteration, std::span<float> in) {
  const uint64_t count = std::min<uint64_t>(l.in_count, in.size());
  for (uint64_t i = 0; i < count; ++i) in[i] = input_value(l, rank, i, iteration);
}

void poison(std::span<float> out) {
  std::fill(out.begin(), out.end(), kPoison);
}

Verification verify_output(const Layout& l, int rank, uint32_t iteration,
                           std::span<const float> out) {
  Verification v;
  for (uint64_t i = 0; i < l.out_count; ++i) {
    const float want = expected_value(l, rank, i, iteration);
    const float got = i < out.size() ? out[i] : kPoison;
    if (got == want) continue;
    if (v.wrong++ == 0) {
      v.first_index = i;
      v.got = got;
      v.expected = want;
    }
  }
  return v;
}

}  // namespace fabemu::collective
