// `predict LAB`: what the link model predicts for each collective in a lab that is up, from the
// shapes its links have now, as the JSON `fabemu-collective --predict` reads.
#include <cstdio>

#include "apply/lab.h"
#include "cli/commands.h"
#include "runtime/workload.h"

namespace fabemu::cli {

int cmd_predict(const std::string& lab, const std::string& transport, const LabPaths& base) {
  if (transport != "tcp" && transport != "ibverbs") {
    print_error("predict: --transport is tcp or ibverbs (got '" + transport + "')");
    return kExitBadInput;
  }
  LabPaths paths = base;
  paths.lab = lab;
  auto model = lab_model(paths);
  if (!model) return lab_error(model.error());
  std::printf("%s\n", live_predictions(*model, paths, transport).c_str());
  return kExitOk;
}

}  // namespace fabemu::cli
