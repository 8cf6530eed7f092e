// Rank 0's output: an nccl-tests-style table, or JSON lines (one object per size, then a
// summary).
#pragma once

#include <string>
#include <vector>

#include "collective/benchmark.h"

namespace fabemu::collective {

struct RunInfo {
  std::string library;
  std::string transport;
  int ranks = 1;
  bool predictions = false;  // a prediction file was given: show its columns
  double time_scale = 1;     // the lab's time dilation: results are the real fabric's
};

// "#  collective allreduce  library gloo  transport tcp  ranks 8  algorithm ring_chunked" and
// the column names.
std::string table_header(const RunInfo& run, Collective c, const std::string& algorithm);
std::string table_row(const RunInfo& run, const SizeResult& r);
// "# avg busbw (GB/s): 1.234" over the sizes of one collective.
std::string table_footer(const std::vector<SizeResult>& results);
// "# wrong values: 0 OK", or the total and where they were, with FAILED.
std::string verdict_line(const std::vector<SizeResult>& results);

std::string json_result(const RunInfo& run, const SizeResult& r);
std::string json_summary(const RunInfo& run, const std::vector<SizeResult>& results);

}  // namespace fabemu::collective
