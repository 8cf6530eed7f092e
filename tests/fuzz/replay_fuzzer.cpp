// libFuzzer target: one input through both replay readers, as SimAI's workload text and as
// Chakra execution traces (the whole input as one rank's file, and split in two as two ranks'),
// and whatever they accept through the checks and the schedule the ranks and the model use.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "replay/chakra.h"
#include "replay/schedule.h"
#include "replay/simai.h"

namespace {

void require(bool promise) {
  if (!promise) std::abort();
}

// An accepted program is consistent (validate), and plays to the end on a virtual clock.
void play(const fabemu::replay::Program& p) {
  using namespace fabemu::replay;
  require(validate(p).ok());
  require(static_cast<int>(p.ranks.size()) == p.world);
  if (p.world > 64) return;  // the schedule is exercised on small worlds; big ones are slow
  auto t = simulate(p, [](int, const Op& op) {
    return static_cast<double>(op.compute_ns % 1000 + op.bytes % 1000);
  });
  require(t.ok());
  (void)summarize(p, *t);
  for (int r = 0; r < p.world; ++r) (void)p.memory_bytes(r);
  (void)p.describe();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  using namespace fabemu::replay;
  if (auto p = read_simai(text, "fuzz.txt")) play(*p);
  if (auto p = parse_chakra({text}, {"fuzz.0.et"}, "", "")) play(*p);
  const std::string half = text.substr(0, size / 2), rest = text.substr(size / 2);
  if (auto p =
          parse_chakra({half, rest}, {"fuzz.0.et", "fuzz.1.et"}, R"({"1": [0, 1]})", "groups.json"))
    play(*p);
  return 0;
}
