// `graph LAB|SCENARIO`: the topology picture alone, as SVG or Graphviz DOT.
#include <cstdio>

#include "cli/commands.h"
#include "report/report.h"
#include "scenario/loader.h"
#include "util/files.h"

namespace fabemu::cli {

int cmd_graph(const std::string& target, const std::string& output, const std::string& format,
              const LabPaths& base) {
  std::string fmt = format;
  if (fmt.empty()) fmt = output.ends_with(".dot") || output.ends_with(".gv") ? "dot" : "svg";
  if (fmt != "svg" && fmt != "dot") {
    print_error("graph: --format is svg or dot (got '" + fmt + "')");
    return kExitBadInput;
  }
  Result<LabModel> model = make_error("", 0);
  if (target.ends_with(".yaml") || target.ends_with(".yml") ||
      target.find('/') != std::string::npos) {
    auto s = load_scenario_file(target);
    if (!s) {
      print_error(s.error().what());
      return kExitBadInput;
    }
    model = build_model(*s, 0);
    if (!model) {
      print_error(model.error().what());
      return kExitBadInput;
    }
  } else {
    LabPaths paths = base;
    paths.lab = target;
    model = lab_model(paths);
    if (!model) return lab_error(model.error());
  }
  const std::string text = fmt == "dot" ? topology_dot(*model) : topology_svg(*model);
  if (output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  if (auto w = write_file(output, text); !w) {
    print_error("graph: " + w.error().what());
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace fabemu::cli
