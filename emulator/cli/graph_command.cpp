// `graph LAB|SCENARIO`: the topology picture alone, as SVG or Graphviz DOT, or as JSON.
#include <cstdio>

#include "cli/commands.h"
#include "report/report.h"
#include "util/files.h"

namespace fabemu::cli {

int cmd_graph(const std::string& target, const std::string& output, const std::string& format,
              const LabPaths& base) {
  std::string fmt = format;
  if (fmt.empty())
    fmt = output.ends_with(".dot") || output.ends_with(".gv") ? "dot"
          : output.ends_with(".json")                         ? "json"
                                                              : "svg";
  if (fmt != "svg" && fmt != "dot" && fmt != "json") {
    print_error("graph: --format is svg, dot or json (got '" + fmt + "')");
    return kExitBadInput;
  }
  auto model = session::topology_of(target, base);
  if (!model) return report_error(model.error());
  const std::string text = fmt == "dot"    ? topology_dot(*model)
                           : fmt == "json" ? json_text(session::topology_json(*model)) + "\n"
                                           : topology_svg(*model);
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
