// Writes the Chakra example of scenarios/replay/chakra/: the tests' 2-layer step of 8 ranks
// (tensor-parallel in 2 groups of 4, data-parallel in 4 groups of 2, one send from rank 0 to
// rank 4; tests/replay/chakra_trace.h) at a 400G fabric's sizes, as PREFIX.<rank>.et and
// PREFIX-groups.json. Usage: fabemu_chakra_example PREFIX [TP_BYTES DP_BYTES COMPUTE_US]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../replay/chakra_trace.h"
#include "util/files.h"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 5) {
    std::fprintf(stderr, "usage: %s PREFIX [TP_BYTES DP_BYTES COMPUTE_US]\n", argv[0]);
    return 2;
  }
  const std::string prefix = argv[1];
  const int64_t tp = argc == 5 ? std::atoll(argv[2]) : 16 << 20;
  const int64_t dp = argc == 5 ? std::atoll(argv[3]) : 32 << 20;
  const uint64_t us = argc == 5 ? std::strtoull(argv[4], nullptr, 10) : 500;
  const auto ranks = fabemu::testing::tp_dp_trace(tp, dp, us);
  for (size_t r = 0; r < ranks.size(); ++r)
    if (auto w = fabemu::write_file(fabemu::replay::chakra_file(prefix, int(r)), ranks[r]); !w) {
      std::fprintf(stderr, "%s\n", w.error().what().c_str());
      return 1;
    }
  if (auto w = fabemu::write_file(prefix + "-groups.json", fabemu::testing::tp_dp_groups_json());
      !w) {
    std::fprintf(stderr, "%s\n", w.error().what().c_str());
    return 1;
  }
  return 0;
}
