// A run across machines: each machine's agent hands the launcher its share (as JSON), and the
// launcher merges the shares into the one report of the run.
#pragma once

#include <string>
#include <vector>

#include "report/report.h"
#include "results/reachability.h"

namespace fabemu {

// One machine's share of the workload: the steps as it saw them (verdicts of its own ranks),
// its fault log (steps it does not own say so), its telemetry (the directions that leave its
// nodes, its hosts' rxe counters). Results and notes are not in it: the launcher reads rank 0's
// results where every machine writes them.
std::string run_part_text(const RunReport& part);
// `faults` is the scenario's timeline (expand_faults), which the log's entries refer to by
// position. EINVAL naming `what` when the text is not a part.
Result<RunReport> parse_run_part(const std::string& text, const std::string& what,
                                 const std::vector<FaultStep>& faults);

// Reachability pairs (a machine's: from its hosts) and back.
std::string pairs_text(const std::vector<PairResult>& pairs);
Result<std::vector<PairResult>> parse_pairs(const std::string& text, const std::string& what);

// The run's report from its machines' parts (in the allocation's order, `m.part` holding the
// placement): a step failed if it failed anywhere (the machine named), took as long as its
// slowest machine; a fault is the owner's entry (reroutes counted over all machines); each
// direction's samples come from the machine it leaves, matched by sample index.
RunReport merge_run_parts(const LabModel& m, const std::vector<std::string>& machines,
                          const std::vector<RunReport>& parts);

}  // namespace fabemu
