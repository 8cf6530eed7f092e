// `predict LAB`: the link model's prediction for each collective, from the live link shapes.
#include "runtime/workload.h"
#include "session/session.h"

namespace fabemu::session {

Result<Json> predict(const std::string& lab, const std::string& transport, const LabPaths& base) {
  if (transport != "tcp" && transport != "ibverbs")
    return with_failure(
        make_error("predict: --transport is tcp or ibverbs (got '" + transport + "')"),
        Failure::BadInput);
  LabPaths paths = base;
  paths.lab = lab;
  auto model = open_lab(paths);
  if (!model) return model.error();
  Json out = {
      {"schema", kSchemaVersion}, {"command", "predict"}, {"lab", lab}, {"transport", transport}};
  out.update(Json::parse(live_predictions(*model, paths, transport)));
  return out;
}

}  // namespace fabemu::session
