// libFuzzer target: scenario text through the loader and, when it loads, through the pure
// model (topology, addresses, routes, BGP). A Result error is a pass if it says where; the target
// looks for crashes, hangs, leaks, undefined behaviour and errors without a location.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/lab_model.h"
#include "model/topology.h"
#include "scenario/loader.h"

namespace {

constexpr char kFile[] = "fuzz.yaml";

// build_model's time grows with the fabric well past linear: under ASan a 5024-node
// leaf-spine (within the loader's limits) takes 13 s, which would be a timeout that is not a
// bug. At most 600 nodes (under a second, the address pool bounding the links) still models
// every seed: the largest, scenarios/leaf-spine-512.yaml, has 584.
constexpr size_t kMaxModelNodes = 600;

// loader.h's promise: an error starts with "file:line:col: ".
bool located(const std::string& message) {
  const std::string prefix = std::string(kFile) + ":";
  if (message.compare(0, prefix.size(), prefix) != 0) return false;
  int line = 0, column = 0, end = 0;
  if (std::sscanf(message.c_str() + prefix.size(), "%d:%d:%n", &line, &column, &end) != 2)
    return false;
  return line >= 1 && column >= 1 && message[prefix.size() + end] == ' ';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto scenario = fabemu::load_scenario_string(text, kFile);
  if (!scenario) {
    if (!located(scenario.error().message)) {
      std::fprintf(stderr, "error without a location: %s\n", scenario.error().message.c_str());
      std::abort();
    }
    return 0;
  }
  auto topo = fabemu::build_topology(*scenario);
  if (!topo || topo->nodes.size() > kMaxModelNodes) return 0;
  (void)fabemu::build_model(*scenario, 0);
  return 0;
}
