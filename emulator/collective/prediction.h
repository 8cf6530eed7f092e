// Predicted collective times from the emulator's bandwidth model, read from a JSON file:
//   {"allreduce": {"latency_s": 2.1e-05, "seconds_per_byte": 1.7e-09}, "alltoall": {...}}
// time(S) = latency_s + seconds_per_byte * S for S = the size column's bytes. Other keys (a
// "bus_factor", collectives this benchmark does not run) are ignored.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "collective/collective.h"
#include "util/result.h"

namespace fabemu::collective {

struct LinearModel {
  double latency_s = 0;
  double seconds_per_byte = 0;
};

class Predictions {
 public:
  // `origin` names the text in errors (the file path).
  static Result<Predictions> parse(std::string_view json, const std::string& origin);
  static Result<Predictions> load(const std::string& path);

  bool has(Collective c) const { return models_.count(c) != 0; }
  std::optional<double> time_s(Collective c, uint64_t size) const;
  // The predicted busbw (GB/s): size / time, times the same bus factor as the measurement;
  // none when seconds_per_byte is 0 (the model found no rate limit on the paths).
  std::optional<double> busbw(Collective c, uint64_t size, int ranks) const;

 private:
  std::map<Collective, LinearModel> models_;
};

}  // namespace fabemu::collective
