// The data every rank feeds a collective, and the closed-form check of every output element.
//
// Values are small integers in float32, so reductions are exact whatever order a library adds
// them in: every input depends on (rank, element, iteration), and every sum stays below 2^24.
// A value that is wrong, stale (from an earlier iteration), misplaced or missing a rank's
// contribution fails the check.
#pragma once

#include <cstdint>
#include <span>

#include "collective/collective.h"

namespace fabemu::collective {

// What an output element holds before the collective writes it; no pattern produces it.
constexpr float kPoison = -1.0f;

// This rank's input (`in_count` elements; broadcast's non-root ranks get kPoison).
void fill_input(const Layout& l, int rank, uint32_t iteration, std::span<float> in);
void poison(std::span<float> out);

float input_value(const Layout& l, int rank, uint64_t index, uint32_t iteration);
float expected_value(const Layout& l, int rank, uint64_t index, uint32_t iteration);

struct Verification {
  uint64_t wrong = 0;
  // The first wrong element, when there is one.
  uint64_t first_index = 0;
  float got = 0;
  float expected = 0;
};

// Checks the first `out_count` elements of `out` against expected_value.
Verification verify_output(const Layout& l, int rank, uint32_t iteration,
                           std::span<const float> out);

}  // namespace fabemu::collective
