// JSON for machine output and input: nlohmann's library (Debian's nlohmann-json3-dev). Written
// objects keep their keys in the order they were set, so that `--json` output and JSON lines
// read in the same order as the text they stand beside.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace fabemu {

using Json = nlohmann::ordered_json;

// The version of every command's `--json` layout (`"schema": 1`, docs/json.md): bumped when a
// field changes meaning or goes; new fields do not bump it.
inline constexpr int kJsonSchemaVersion = 1;

// One line of JSON; bytes that are not UTF-8 (a path, a kernel message) become U+FFFD instead
// of an exception.
inline std::string json_text(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace fabemu
