// The report of a run: what `fabemu run` measured and did, as JSON lines, as a self-contained
// HTML page (an SVG picture of the topology, busbw per size, link counters over time with the
// fault events marked) and the topology alone as SVG or Graphviz DOT (`fabemu graph`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "results/ecmp_groups.h"
#include "results/faults.h"
#include "results/order.h"
#include "results/replay.h"
#include "results/telemetry.h"
#include "results/workload.h"
#include "util/json.h"

namespace fabemu {

struct StepReport {
  std::string title;
  bool ok = false;
  std::string failure;
  // Relative to the workload's start, in the real fabric's time; and on the wall clock (N
  // times longer in a dilated lab).
  double start_s = 0, seconds = 0;
  double wall_start_s = 0, wall_seconds = 0;
  std::string collective;  // empty for exec steps
  std::vector<SizeResult> results;
  std::vector<FlowResult> flows;  // incast steps
  std::string note;  // about the results (far below the prediction: the machine set the speed)
  std::optional<double> receiver_bps;  // incast steps: StepResult::receiver_bps
  // A collective step's library and transport as this lab ran them ("auto" resolved).
  std::string library, transport;
  // The ECMP groups' balance over this step alone (collective and traffic steps), busiest
  // first: how the mode in force spread it.
  std::vector<GroupBalance> groups;
  // Where switches balance in eBPF: the flows' order at their last hop, the balancers' path
  // changes and the hosts' TCP reaction, over this step.
  std::optional<StepOrder> order;
  std::optional<ReplayResult> replay;  // replay steps: iterations measured and predicted
};

struct ExpectResult {
  std::string what;  // "busbw_min 20 Mbit/s: workload[0] 2.93 MB/s at 1 MiB"
  bool ok = false;
};

struct RunReport {
  std::string lab, scenario_file;
  uint64_t seed = 0;
  // How the lab's link model ran (fq, htb or policer, as `up` chose); unset when not known.
  std::optional<PlanOptions> link_mode;
  // The most a read of one direction's counters can miss (TelemetrySampler::slack_bytes).
  uint64_t sample_slack_bytes = 0;
  int reachable = 0, pairs = 0;
  double reach_seconds = 0;  // the reachability check's wall clock (0: not known)
  std::vector<StepReport> steps;
  std::string not_run;  // why the workload did not run (empty: it ran, or it has no steps)
  std::vector<AppliedFault> faults;
  std::vector<TelemetrySample> samples;
  std::vector<ExpectResult> expectations;
  std::vector<std::string> notes;  // what went wrong beside the workload (telemetry unreadable)
};

// Checks the scenario's `expect:` against the report; the results in scenario order.
std::vector<ExpectResult> check_expectations(const Expectations& e, const RunReport& r);

// How direction `d`'s counters grew from one sample to a later one (0 for a counter that went
// back, as when the model is attached to a port mid-run); `shaped`, the queue, the queue delay
// and the read time are the later sample's.
DirectionSample growth(const TelemetrySample& from, const TelemetrySample& to, size_t d);
// When direction `d` was read in sample `s` (its own stamp, else the sample's), and the real
// time between two reads of it.
double read_time(const TelemetrySample& s, size_t d);
double read_interval(const TelemetrySample& from, const TelemetrySample& to, size_t d);
// The same from the first sample to the last (zeros without two), and the time between them.
DirectionSample run_growth(const RunReport& r, size_t d);
double run_seconds(const RunReport& r);

// Frames the link model dropped during the run, all directions (last sample minus first).
uint64_t run_drops(const RunReport& r);

// What the link model did not do in this run, as `up` said it: empty with fq (or unknown),
// else the mode's sentence and the delay and jitter the scenario asked for and did not get.
std::string link_mode_note(const LabModel& m, const RunReport& r);

// One direction over the run, for the link tables of the terminal and the page.
struct DirectionFigures {
  size_t dir = 0;  // 2 * link + (b_to_a ? 1 : 0)
  std::string name;
  DirectionSample growth;  // run_growth
  double rate_bps = 0;     // bytes over the run's time
  uint64_t line_bps = 0;   // the link's rate (the real fabric's); 0: unlimited
};
// Every direction, those that dropped first (most drops), then the busiest (most bytes).
std::vector<DirectionFigures> rank_directions(const LabModel& m, const RunReport& r);

// Every ECMP group's balance over the run (run_growth of its members), busiest first; none
// without two samples.
std::vector<GroupBalance> run_group_balances(const LabModel& m, const RunReport& r);

// The spread of one size's per-rank times (the real fabric's µs, as time_us), and which host
// the slowest rank ran on (the host of that rank: Node::rank; empty when unknown).
struct RankSpread {
  double min_us = 0, median_us = 0, max_us = 0;
  int slowest_rank = -1;
  std::string slowest_host;
};
std::optional<RankSpread> rank_spread(const Topology& t, const SizeResult& s);

// What faults did to each link during the run (played steps: down, up, flaps, a NIC down, a
// host crashed and restarted): taken down at least once, and still down at the end.
struct LinkDowns {
  std::vector<int> times_down;  // per link
  std::vector<bool> down_at_end;
  bool any() const;
};
LinkDowns link_downs(const Topology& t, const std::vector<AppliedFault>& faults);

// The samples the plots draw rates between: the first, then each at least half the median
// interval after the last one kept (the final sample, taken when the workload ended, can be
// a millisecond after the one before: a rate over it would be mostly noise).
std::vector<size_t> plotted_samples(const RunReport& r);
// Direction d's growth between consecutive plotted samples, with the later read's time and the
// time between its two reads (the real fabric's): what the plots draw per second.
struct PlottedInterval {
  double t_s = 0, dt_s = 0;
  DirectionSample growth;
};
std::vector<PlottedInterval> plotted_intervals(const RunReport& r, size_t d);

// How far the throughput plots can overstate a link: a read that missed `r.sample_slack_bytes`
// still being counted makes the next interval's rate that much higher, at most slack / interval
// (the shortest of the run), here against the slowest shaped link's rate.
struct SamplerBound {
  uint64_t slack_bytes = 0;
  double shortest_interval_s = 0;  // between two plotted reads of a direction (real fabric's)
  double bps = 0;                  // slack * 8 / shortest interval
  uint64_t slowest_line_bps = 0;   // 0: no shaped link with a rate
  double share() const { return slowest_line_bps ? bps / double(slowest_line_bps) : 0; }
};
SamplerBound sampler_bound(const LabModel& m, const RunReport& r);

// The run as records, each with its "type": run (the header), step, result, flow, fault,
// ecmp_group, sample, expect; report.jsonl holds one per line, `run --json` all but the samples.
std::vector<Json> report_records(const LabModel& m, const RunReport& r);
std::string report_json_lines(const LabModel& m, const RunReport& r);
std::string report_html(const LabModel& m, const RunReport& r);

// The topology picture; with a report, links are coloured by how busy they were (bytes over the
// run against their rate) and drawn red where frames were dropped.
std::string topology_svg(const LabModel& m, const RunReport* r = nullptr);
std::string topology_dot(const LabModel& m);

}  // namespace fabemu
