// Renders probe results for people (an aligned table) and for programs (one JSON line).
#include <algorithm>
#include <cstdio>
#include <string>

#include "doctor/probe.h"

namespace fabemu {

namespace {

std::string table_status(ProbeStatus s) {
  return s == ProbeStatus::Unknown ? "?" : std::string(to_string(s));
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// A JSON string literal: quotes, backslashes and control characters escaped; other bytes,
// including UTF-8 sequences, pass through as they are.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string format_doctor_table(const KernelInfo& kernel, const std::vector<FeatureProbe>& probes) {
  std::string out = "kernel " + kernel.release + (kernel.root ? ", running as root" : "") + "\n";
  if (!kernel.root)
    out += "not running as root: kernel features were not probed (run: sudo fabemu doctor)\n";
  out += "\n";

  size_t name_width = std::string("FEATURE").size();
  size_t status_width = std::string("STATUS").size();
  for (const FeatureProbe& p : probes) {
    name_width = std::max(name_width, p.name.size());
    status_width = std::max(status_width, table_status(p.status).size());
  }
  std::string indent(name_width + 2 + status_width + 2, ' ');
  out += pad("FEATURE", name_width + 2) + pad("STATUS", status_width + 2) + "DETAIL\n";
  for (const FeatureProbe& p : probes) {
    out += pad(p.name, name_width + 2) + pad(table_status(p.status), status_width + 2) + p.detail +
           "\n";
    // The cost goes under the detail rather than in a fourth column: both are sentences, and
    // side by side they would not fit a terminal.
    bool missing = p.status == ProbeStatus::No || p.status == ProbeStatus::Partial;
    if (missing && !p.cost.empty()) out += indent + "-> " + p.cost + "\n";
  }
  return out;
}

std::string doctor_json(const KernelInfo& kernel, const std::vector<FeatureProbe>& probes) {
  std::string out = "{\"kernel\":{\"release\":" + json_string(kernel.release) +
                    ",\"root\":" + (kernel.root ? "true" : "false") + "},\"features\":[";
  for (size_t i = 0; i < probes.size(); ++i) {
    const FeatureProbe& p = probes[i];
    if (i) out += ",";
    out += "{\"id\":" + json_string(p.id) + ",\"name\":" + json_string(p.name) +
           ",\"status\":" + json_string(std::string(to_string(p.status))) +
           ",\"detail\":" + json_string(p.detail) + ",\"cost\":" + json_string(p.cost) + "}";
  }
  return out + "]}";
}

}  // namespace fabemu
