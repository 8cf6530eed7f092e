// Renders probe results for people (an aligned table) and for programs (one JSON line).
#include <algorithm>
#include <cstdio>
#include <string>

#include "doctor/probe.h"
#include "util/json.h"

namespace fabemu {

namespace {

std::string table_status(ProbeStatus s) {
  return s == ProbeStatus::Unknown ? "?" : std::string(to_string(s));
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
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
  // What this kernel lacks most often is one flag away.
  const bool lacks = std::any_of(probes.begin(), probes.end(), [](const FeatureProbe& p) {
    return (p.id == "rxe" || p.id == "sch_fq") && p.status == ProbeStatus::No;
  });
  if (lacks)
    out +=
        "\nThis kernel lacks rxe or fq: `fabemu run SCENARIO --vm` (and `fabemu doctor --vm`) "
        "runs in a VM whose kernel has them (KVM where this machine has it, else software "
        "emulation: minutes, not seconds).\n";
  return out;
}

Json doctor_json(const KernelInfo& kernel, const std::vector<FeatureProbe>& probes) {
  Json features = Json::array();
  for (const FeatureProbe& p : probes) {
    features.push_back({{"id", p.id},
                        {"name", p.name},
                        {"status", to_string(p.status)},
                        {"detail", p.detail},
                        {"cost", p.cost}});
    if (!p.figures.is_null()) features.back()["figures"] = p.figures;
  }
  return {{"schema", kJsonSchemaVersion},
          {"command", "doctor"},
          {"kernel", {{"release", kernel.release}, {"root", kernel.root}}},
          {"features", features}};
}

}  // namespace fabemu
