// Input patterns and their closed-form expected outputs.
//
// A rank fills and checks millions of elements per iteration, on the same cores that carry the
// emulated traffic (the ranks' own code was 17% of a loaded 8-host lab's CPU, mostly this: a call,
// a 64-bit mix and a division per element, 9-16 ns), so each collective's loop is written out
// with the work of one call hoisted, in 32-bit arithmetic the compiler does several elements at
// a time (4-5 ns per element checked).
#include "collective/pattern.h"

#include <algorithm>

namespace fabemu::collective {
namespace {

constexpr uint32_t kExact = uint32_t{1} << 24;  // floats hold every integer below this

// murmur3's finalizer of (element, iteration), a bijection of 32-bit words: neighbouring
// elements and iterations look unrelated, so a shifted or stale block does not pass by accident.
inline uint32_t mix(uint64_t element, uint32_t iteration) {
  uint32_t h = static_cast<uint32_t>(element) * 0x9E3779B1u + iteration * 0x85EBCA77u;
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

// Collectives that move values without adding them carry any integer below 2^24.
inline float id_value(uint64_t element, uint32_t iteration) {
  return static_cast<float>(static_cast<int32_t>(mix(element, iteration) & (kExact - 1)));
}

// Reductions: input = base(element) + ((rank + element) mod 8), base in [1, bases], so a sum
// over n ranks is at most n * (bases + 7) < 2^24, and dropping or repeating a rank's
// contribution always changes it (every input is >= 1).
struct SumPattern {
  explicit SumPattern(int ranks) : n(static_cast<uint32_t>(std::max(ranks, 1))) {
    const uint32_t room = (kExact - 1) / n;
    bases = std::clamp<uint32_t>(room > 7 ? room - 7 : 1, 1, 8192);
  }
  // In [1, bases]: the mix scaled to the range (no division).
  uint32_t base(uint64_t element, uint32_t iteration) const {
    return 1 + static_cast<uint32_t>((uint64_t{mix(element, iteration)} * bases) >> 32);
  }
  float input(int rank, uint64_t element, uint32_t iteration) const {
    const uint32_t v = base(element, iteration) + ((static_cast<uint32_t>(rank) + element) & 7);
    return static_cast<float>(static_cast<int32_t>(v));
  }
  // The sum of input() over ranks 0..n-1, in closed form: n bases, 28 for every 8 ranks, and
  // for the remaining m = n mod 8 ranks the sum of (e + k) mod 8 over k < m, e = element mod
  // 8: m*e + m(m-1)/2, less 8 for each k where e + k wraps (e + m - 8 of them, if positive).
  float expected(uint64_t element, uint32_t iteration) const {
    const uint32_t m = n % 8, e = static_cast<uint32_t>(element) & 7;
    const int32_t wraps = std::max<int32_t>(0, static_cast<int32_t>(e + m) - 8);
    const uint32_t tail = m * e + m * (m - 1) / 2 - 8 * static_cast<uint32_t>(wraps);
    const uint32_t v = n * base(element, iteration) + (n / 8) * 28 + tail;
    return static_cast<float>(static_cast<int32_t>(v));
  }

  uint32_t n, bases = 1;
};

// Calls `f(i, value)` for the elements [from, to) of this rank's input, one loop per collective.
template <typename F>
void each_input(const Layout& l, int rank, uint32_t iteration, uint64_t from, uint64_t to, F f) {
  const uint64_t n = static_cast<uint64_t>(l.ranks), r = static_cast<uint64_t>(rank);
  const SumPattern sums(l.ranks);
  switch (l.collective) {
    case Collective::AllReduce:
    case Collective::ReduceScatter:
      for (uint64_t i = from; i < to; ++i) f(i, sums.input(rank, i, iteration));
      return;
    case Collective::AllGather:
      for (uint64_t i = from; i < to; ++i) f(i, id_value(r * l.block + i, iteration));
      return;
    case Collective::AllToAll:  // element j of the block for rank d is (rank, d, j)
      for (uint64_t i = from; i < to; ++i) f(i, id_value(r * n * l.block + i, iteration));
      return;
    case Collective::Broadcast:
      for (uint64_t i = from; i < to; ++i)
        f(i, rank == kBroadcastRoot ? id_value(i, iteration) : kPoison);
      return;
  }
}

// Calls `f(i, value)` for the elements [from, to) of this rank's output as it should be.
template <typename F>
void each_expected(const Layout& l, int rank, uint32_t iteration, uint64_t from, uint64_t to, F f) {
  const uint64_t n = static_cast<uint64_t>(l.ranks), r = static_cast<uint64_t>(rank);
  const SumPattern sums(l.ranks);
  switch (l.collective) {
    case Collective::AllReduce:
      for (uint64_t i = from; i < to; ++i) f(i, sums.expected(i, iteration));
      return;
    case Collective::ReduceScatter:
      for (uint64_t i = from; i < to; ++i) f(i, sums.expected(r * l.block + i, iteration));
      return;
    case Collective::AllGather:
    case Collective::Broadcast:
      for (uint64_t i = from; i < to; ++i) f(i, id_value(i, iteration));
      return;
    case Collective::AllToAll:  // block s came from rank s: its (s, rank, j)
      for (uint64_t s = from / l.block, j = from % l.block, i = from; i < to; ++s, j = 0)
        for (; j < l.block && i < to; ++j, ++i)
          f(i, id_value((s * n + r) * l.block + j, iteration));
      return;
  }
}

}  // namespace

float input_value(const Layout& l, int rank, uint64_t index, uint32_t iteration) {
  float v = kPoison;
  each_input(l, rank, iteration, index, index + 1, [&](uint64_t, float x) { v = x; });
  return v;
}

float expected_value(const Layout& l, int rank, uint64_t index, uint32_t iteration) {
  float v = kPoison;
  each_expected(l, rank, iteration, index, index + 1, [&](uint64_t, float x) { v = x; });
  return v;
}

void fill_input(const Layout& l, int rank, uint32_t iteration, std::span<float> in) {
  const uint64_t count = std::min<uint64_t>(l.in_count, in.size());
  float* out = in.data();
  each_input(l, rank, iteration, 0, count, [out](uint64_t i, float v) { out[i] = v; });
}

void poison(std::span<float> out) {
  std::fill(out.begin(), out.end(), kPoison);
}

Verification verify_output(const Layout& l, int rank, uint32_t iteration,
                           std::span<const float> out) {
  Verification v;
  const uint64_t have = std::min<uint64_t>(l.out_count, out.size());
  const float* got = out.data();
  // Counted without a branch per element; the first wrong one looked for only when there is one.
  uint64_t wrong = 0;
  each_expected(l, rank, iteration, 0, have,
                [&](uint64_t i, float want) { wrong += got[i] != want; });
  v.wrong = wrong + (l.out_count - have);  // missing elements read as kPoison, never expected
  if (v.wrong == 0) return v;
  bool found = false;
  each_expected(l, rank, iteration, 0, l.out_count, [&](uint64_t i, float want) {
    const float g = i < have ? got[i] : kPoison;
    if (found || g == want) return;
    found = true;
    v.first_index = i;
    v.got = g;
    v.expected = want;
  });
  return v;
}

}  // namespace fabemu::collective
