// `predict LAB`: the link model's prediction for each collective, from the live link shapes;
// `predict LAB --replay FILE`: its iteration of a training step.
#include "runtime/replay_step.h"
#include "runtime/workload.h"
#include "session/session.h"

namespace fabemu::session {
namespace {

// The running lab's model, for a transport the model knows.
Result<LabModel> open_for_predict(const std::string& transport, const LabPaths& paths) {
  if (transport != "tcp" && transport != "ibverbs")
    return with_failure(
        make_error("predict: --transport is tcp or ibverbs (got '" + transport + "')"),
        Failure::BadInput);
  return open_lab(paths);
}

}  // namespace

Result<Json> predict(const std::string& lab, const std::string& transport, const LabPaths& base) {
  LabPaths paths = base;
  paths.lab = lab;
  auto model = open_for_predict(transport, paths);
  if (!model) return model.error();
  Json out = {
      {"schema", kSchemaVersion}, {"command", "predict"}, {"lab", lab}, {"transport", transport}};
  out.update(Json::parse(live_predictions(*model, paths, transport)));
  return out;
}

Result<ReplayPrediction> predict_replay(const std::string& lab, const std::string& transport,
                                        const ReplayStep& step, const LabPaths& base) {
  LabPaths paths = base;
  paths.lab = lab;
  auto model = open_for_predict(transport, paths);
  if (!model) return model.error();
  auto hosts = replay_hosts(*model, step);
  if (!hosts) return with_failure(hosts.error(), Failure::BadInput);
  ReplayPrediction out;
  out.step = step;
  for (int h : *hosts) out.placement.push_back(model->topo.nodes[h].name);
  out.placement_line = describe_placement(*model, step);
  auto predicted = fabemu::predict_replay(*model, live_topology(*model, paths), step, transport);
  if (!predicted) return predicted.error();
  out.model = std::move(*predicted);
  return out;
}

Json ReplayPrediction::to_json(const std::string& lab, const std::string& transport) const {
  Json passes = Json::object(), collectives = Json::array();
  for (const auto& [pass, ns] : model.pass_ns) passes[pass] = ns * 1e-9;
  for (const replay::CollectiveFigure& c : model.collectives)
    collectives.push_back({{"what", c.what},
                           {"count", c.count},
                           {"time_s", c.time_ns * 1e-9},
                           {"busbw_gbps", c.busbw_Bps * 8e-9}});
  return {{"schema", kSchemaVersion},
          {"command", "predict"},
          {"lab", lab},
          {"transport", transport},
          {"replay",
           {{"source", step.file},
            {"format", step.format},
            {"program", step.program->describe()},
            {"placement", placement},
            {"iteration_s", model.iteration_ns * 1e-9},
            {"slowest_rank", model.slowest_rank},
            {"compute_s", model.compute_ns * 1e-9},
            {"exposed_comm_s", model.exposed_comm_ns * 1e-9},
            {"passes", passes},
            {"collectives", collectives}}}};
}

}  // namespace fabemu::session
