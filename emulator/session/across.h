// The launching side of a lab across machines (`--on LAUNCHER`), inside the session layer: the
// launcher (runtime/launcher.h) starts `fabemu agent` (or the machine's own `fabemu down`,
// `status`, `exec`, `link`) on every machine; this side agrees the pool and time scale, keeps
// the lab's record, and merges what the machines answer into the one-machine results.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/cluster.h"
#include "runtime/launcher.h"
#include "session/session.h"

namespace fabemu::session {

// A lab built across machines: its record and the launcher that reaches them.
struct AcrossLab {
  ClusterRecord record;
  std::unique_ptr<Launcher> launcher;
};

Result<UpOutcome> up_across(const UpRequest& req, const LabPaths& base, Observer& observer,
                            AcrossLab& out);
Result<DownOutcome> down_across(const std::vector<std::string>& labs, const std::string& on,
                                const LabPaths& base);
Result<Json> status_across(const std::string& lab, const std::string& on, const LabPaths& base);
Result<ExecOutcome> exec_across(const ExecRequest& req, const LabPaths& base);
Result<LinkOutcome> link_across(const LinkRequest& req, const LabPaths& base);
// `run`'s phases across machines: every machine's hosts ping every host; every machine plays
// the workload, its faults and its sampler from one start, and their parts are merged into
// `report` (each step to the observer); false when a step failed or a part is missing.
Result<ReachabilityReport> reach_across(AcrossLab& lab, const LabPaths& base);
bool workload_across(AcrossLab& lab, const LabModel& m, const LabPaths& base, RunReport& report,
                     Observer& observer);

}  // namespace fabemu::session
