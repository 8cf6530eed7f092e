// `perf LAB SERVER CLIENT`: the request checked, what runs where said, the pair run.
#include "runtime/perf.h"
#include "session/session.h"

namespace fabemu::session {

Result<PerfResult> perf(const std::string& lab, const PerfRequest& req, const LabPaths& base,
                        Observer& observer) {
  auto bad = [](const std::string& m) { return with_failure(make_error(m), Failure::BadInput); };
  if (!is_perf_tool(req.tool))
    return bad("perf: --tool " + req.tool +
               " is not one of ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_send_lat, "
               "ucx_perftest");
  if (req.timeout_s <= 0) return bad("perf: --timeout takes a positive number of seconds");
  FABEMU_TRY(need_root("perf"));
  LabPaths paths = base;
  paths.lab = lab;
  auto model = open_lab(paths);
  if (!model) return model.error();
  if (model->part)
    for (const std::string& host : {req.server, req.client})
      if (const int id = model->topo.find(host); id >= 0 && !local_node(*model, id))
        return make_error("perf: " + host + " is on machine " +
                          model->part->machines[model->part->placement.machine_of[id]] +
                          "; perf between hosts of one lab across machines is not supported yet "
                          "(run the tools with `fabemu exec LAB:HOST --on slurm`)");
  auto setup = plan_perf(*model, paths, req);
  if (!setup)
    return with_failure(make_error("perf: " + setup.error().message),
                        errno_of(setup.error()) == EINVAL ? Failure::BadInput : Failure::Failed);
  PerfResult out{lab, *setup, {}, model->time_scale};
  observer.remark("perf: " + req.tool + ", server " + req.server + " (" + setup->server_address +
                  "), client " + req.client + " (" + setup->client_address + "), over " +
                  setup->over);
  if (!setup->dilation_note.empty()) observer.remark("perf: " + setup->dilation_note);
  auto ran = run_perf(std::move(*setup));
  if (!ran) return ran.error().context("perf");
  out.outcome = std::move(*ran);
  return out;
}

Json PerfResult::to_json() const {
  const PerfRequest& r = setup.request;
  const PerftestTable table = parse_perftest(outcome.client_output);
  Json rows = Json::array(), real_rows = Json::array();
  for (const std::vector<double>& row : table.rows) {
    Json wall = Json::object(), real = Json::object();
    for (size_t c = 0; c < table.columns.size(); ++c) {
      wall[table.columns[c]] = row[c];
      real[table.columns[c]] = real_value(table.columns[c], row[c], time_scale.factor);
    }
    rows.push_back(std::move(wall));
    real_rows.push_back(std::move(real));
  }
  return {{"schema", kSchemaVersion},
          {"command", "perf"},
          {"lab", lab},
          {"tool", r.tool},
          {"server", r.server},
          {"client", r.client},
          {"server_address", setup.server_address},
          {"client_address", setup.client_address},
          {"over", setup.over},
          {"time_scale", time_scale.factor},
          {"rc_timeout_exp", setup.rc_timeout_exp ? Json(*setup.rc_timeout_exp) : Json(nullptr)},
          {"ok", outcome.ok},
          {"failure", outcome.failure},
          {"rows", rows},
          {"real_rows", real_rows},
          {"output", outcome.client_output},
          {"server_output", outcome.server_output}};
}

}  // namespace fabemu::session
