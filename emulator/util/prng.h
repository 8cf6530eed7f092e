// Seeded randomness every part of fabemu derives from the scenario's seed: the splitmix64 step
// and per-name seeds (link directions, fault events, ECMP hash bases).
#pragma once

#include <cstdint>
#include <string_view>

namespace fabemu {

// splitmix64: one step of the generator (x + golden ratio, then the finalizer).
uint64_t splitmix64(uint64_t x);

// FNV-1a over the bytes of `data`: a stable 64-bit digest of a name or a blob.
uint64_t fnv1a(std::string_view data);

// The seed of one named thing ("leaf1>spine2", "fault 3", "ecmp leaf1"), derived from the
// scenario's seed so that every one has its own sequence and a run repeats.
uint64_t link_seed(uint64_t scenario_seed, std::string_view name);

}  // namespace fabemu
