// `fabemu perf`: a perftest (ib_*_bw/lat) or ucx_perftest pair between two hosts of a lab, the
// server started first and the client run against the server's fabric address once it listens.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "util/process.h"
#include "util/result.h"

namespace fabemu {

struct PerfRequest {
  std::string server, client;        // host names
  std::string tool = "ib_write_bw";  // ib_{write,read,send}_bw, ib_{write,send}_lat, ucx_perftest
  int timeout_s = 60;
  std::vector<std::string> extra;  // passed on to the tool
  bool capture = false;            // keep the client's output (PerfOutcome) instead of ours
};

// Whether `tool` is one `perf` runs (checked before anything else).
bool is_perf_tool(const std::string& tool);

// The run, checked against the lab: both hosts exist and differ, perftest has rxe devices, the
// tool is installed. Errors: EINVAL for a request the lab cannot serve, ENOENT for a tool that
// is not installed.
struct PerfSetup {
  PerfRequest request;
  ProcessSpec server, client;
  std::string server_netns;  // where the server's listening socket appears
  int port = 0;
  std::string server_address, client_address;
  std::string over;  // "fabemu-demo-h1 / fabemu-demo-h2", "TCP (UCX_TLS=tcp; ...)"
  // For a dilated lab: how to read the tool's (wall-clock) figures as the real fabric's.
  std::string dilation_note;
  // perftest: its RC retransmission timeout exponent (-u: 4.096 us x 2^u), raised with a
  // dilated lab's factor; unset for ucx_perftest.
  std::optional<int> rc_timeout_exp;
};
Result<PerfSetup> plan_perf(const LabModel& model, const LabPaths& paths, const PerfRequest& r);

struct PerfOutcome {
  bool ok = false;
  std::string failure;        // "the client on h2 failed (exit status 1)"
  std::string server_output;  // what the server said, for a failure's explanation
  std::string client_output;  // with `capture`: stdout and stderr as written
};

// Runs the pair: the client's output goes to ours (kept instead with `capture`), the server's
// is kept.
Result<PerfOutcome> run_perf(PerfSetup setup);

// perftest's result table: the columns of its header line ("#bytes", "BW average[Gb/sec]",
// "t_avg[usec]", "99% percentile[usec]", ...) and each row of numbers under it; of
// ucx_perftest's, its "Final:" row under names of the same form. Empty when the output has none.
struct PerftestTable {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
};
PerftestTable parse_perftest(const std::string& output);
// A column's values in the real fabric's units under dilation by `factor`: rates (BW, MsgRate)
// times it, times ([usec]) over it, counts (#bytes, #iterations) as they are.
double real_value(const std::string& column, double wall_value, double factor);

}  // namespace fabemu
