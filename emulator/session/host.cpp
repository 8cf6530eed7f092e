// `host crash/restart/freeze/thaw`: host faults on a running lab, by hand.
#include "runtime/host_faults.h"
#include "session/session.h"

namespace fabemu::session {

Result<HostOutcome> host_fault(const HostRequest& req, const LabPaths& base) {
  const std::string& a = req.action;
  if (a != "crash" && a != "restart" && a != "freeze" && a != "thaw")
    return with_failure(
        make_error("host: the action is crash, restart, freeze or thaw, not '" + a + "'"),
        Failure::BadInput);
  FABEMU_TRY(need_root("host"));
  LabPaths paths = base;
  paths.lab = req.lab;
  auto model = open_lab(paths);
  if (!model) return model.error();
  auto dp = kernel_datapath(*model, paths);
  Result<std::string> done = a == "crash"     ? crash_host(*model, paths, req.host, *dp)
                             : a == "restart" ? restart_host(*model, paths, req.host, *dp)
                                              : freeze_host(*model, req.host, a == "freeze", *dp);
  if (!done) {
    Error e = done.error().context("host " + a);
    return errno_of(done.error()) == ENOENT ? with_failure(std::move(e), Failure::BadInput) : e;
  }
  return HostOutcome{req.lab, req.host, a, std::move(*done)};
}

Json HostOutcome::to_json() const {
  return {{"schema", kSchemaVersion}, {"command", "host"}, {"lab", lab}, {"host", host},
          {"action", action},         {"detail", detail}};
}

}  // namespace fabemu::session
