// A run as a JUnit XML report (`run --junit FILE`), so that CI systems show fabemu runs as test
// results: a testsuite per run; the reachability check, each workload step and each expectation
// a testcase, with its figures and, when it failed, why. docs/schema/junit.xsd is the schema it
// is checked against.
#pragma once

#include <string>
#include <vector>

#include "report/report.h"

namespace fabemu {

struct JunitRun {
  const RunReport& report;
  std::string timestamp;     // when the run began, ISO 8601 (UTC, no zone)
  double wall_seconds = 0;   // how long the whole run took
  double time_scale = 1;     // the lab's dilation
  std::string not_run;       // why the workload did not run, if it did not
  std::string report_error;  // the report could not be written
  std::string down_error;    // the lab could not be taken down
  std::string up_error;      // the lab could not be brought up (nothing else ran)
  std::string report_dir;    // where the report went
};

// The document: one testsuite per run (several with `run --compare`).
std::string junit_xml(const std::vector<JunitRun>& runs);

}  // namespace fabemu
