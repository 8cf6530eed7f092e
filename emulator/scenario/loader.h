// Reading a scenario YAML file into a Scenario, with errors that name file, line, column and
// field and say what would be valid.
#pragma once

#include <string>
#include <string_view>

#include "scenario/scenario.h"
#include "util/result.h"

namespace fabemu {

// Limits on what one machine can emulate; beyond them namespaces and veths run out long before
// the fabric is interesting.
inline constexpr int kMaxHosts = 4096;
inline constexpr int kMaxSwitches = 1024;

// A lab name: 1-12 of [a-z0-9-], not starting with '-'. It prefixes namespace and other kernel
// object names, which have tight length limits (interface names: 15 bytes).
bool is_valid_lab_name(std::string_view name);

// A node name of an explicit topology or in a link name: [a-z][a-z0-9-]{0,14}, so that it can be
// an interface name on its own.
bool is_valid_node_name(std::string_view name);

// Reads and validates the scenario at `path`. Errors start with "path:line:col: ".
Result<Scenario> load_scenario_file(const std::string& path);

// A workload file to replay as one step, as `replay: {file: PATH, format: FORMAT, comm_groups:
// GROUPS}` reads it (`fabemu run --replay`, `predict --replay`); errors name the file, the line
// and the field.
Result<ReplayStep> load_replay_step(const std::string& path, const std::string& format,
                                    const std::string& comm_groups = "");

// Same for text already in memory; `file_label` stands for the file name in errors and in
// Scenario::file.
Result<Scenario> load_scenario_string(const std::string& text, const std::string& file_label);

}  // namespace fabemu
