// Small behaviour of the scenario data: locations as text and merging of optional settings.
#include "scenario/scenario.h"

namespace fabemu {

std::string SourceLoc::str() const {
  std::string out = file.empty() ? "<unknown>" : file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  return out;
}

namespace {

template <typename T>
void take_if_set(std::optional<T>& ours, const std::optional<T>& theirs) {
  if (theirs) ours = theirs;
}

}  // namespace

void LinkShape::merge(const LinkShape& over) {
  take_if_set(rate_bps, over.rate_bps);
  take_if_set(delay_ns, over.delay_ns);
  take_if_set(jitter_ns, over.jitter_ns);
  take_if_set(reorder, over.reorder);
  take_if_set(loss, over.loss);
  // The queue limit is one setting spelled as a time or a size: a more specific level that
  // gives either replaces both, so "queue: 64K" over "queue: 200us" does not keep 200us too.
  if (over.queue_ns || over.queue_bytes) {
    queue_ns = over.queue_ns;
    queue_bytes = over.queue_bytes;
  }
  take_if_set(ecn_threshold_ns, over.ecn_threshold_ns);
  take_if_set(down, over.down);
}

bool LinkShape::empty() const {
  return *this == LinkShape{};
}

void HostLimits::merge(const HostLimits& over) {
  take_if_set(cpu, over.cpu);
  take_if_set(memory_bytes, over.memory_bytes);
}

}  // namespace fabemu
