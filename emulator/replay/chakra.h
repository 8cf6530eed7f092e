// MLCommons Chakra execution traces (ET): one file per rank, `PREFIX.<rank>.et`, each a
// GlobalMetadata message and then Node messages, every message preceded by its length as a
// varint (chakra_et.proto is the schema). Nodes become operations (COMP_NODE: compute of its
// duration; COMM_COLL_NODE: a collective, its `comm_type`, `comm_size` bytes and `pg_name`
// group; COMM_SEND_NODE / COMM_RECV_NODE: `comm_dst` / `comm_src`, `comm_size`), in an order
// that honours their data and control dependencies; the others wait for what they wait for
// and take no time. Process groups come as ASTRA-sim's --comm-group-configuration JSON
// ({"1": [0, 1, 2, 3], ...}); a collective without `pg_name` (or with "0", as
// ASTRA-sim reads it) runs on every rank.
#pragma once

#include <string>
#include <vector>

#include "replay/program.h"
#include "util/result.h"

namespace fabemu::replay {

// The ranks' files as bytes (ranks[r] for rank r), named `origins[r]` in errors; `groups_json`
// ("" for none) named `groups_origin`.
Result<Program> parse_chakra(const std::vector<std::string>& ranks,
                             const std::vector<std::string>& origins,
                             const std::string& groups_json, const std::string& groups_origin);

// Rank `rank`'s file: PREFIX.<rank>.et.
std::string chakra_file(const std::string& prefix, int rank);

// PREFIX.0.et, PREFIX.1.et, ... up to the first that does not exist; `groups_file` may be "".
Result<Program> read_chakra(const std::string& prefix, const std::string& groups_file);

// The files' encoding, for the tests and tools that write traces: one message, length first.
std::string delimited(const std::string& message_bytes);

}  // namespace fabemu::replay
