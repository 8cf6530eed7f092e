// `graph LAB|SCENARIO`: the topology picture alone, as SVG or Graphviz DOT, or as JSON.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

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

void add_graph_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    std::string target, output = "-", format;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "graph", "The topology as a picture: SVG or Graphviz DOT, of a lab or a scenario file");
  cmd->add_option("target", a->target, "Lab name, or a scenario YAML file")->required();
  cmd->add_option("-o,--output", a->output, "Output file (.svg, .dot or .json; - for stdout)")
      ->capture_default_str();
  cmd->add_option("--format", a->format,
                  "svg, dot or json (docs/json.md) (default: from -o, else svg)");
  cmd->add_flag_callback(
      "--json", [a] { a->format = "json"; }, "The same as --format json");
  cmd->callback([a, &cl] { cl.exit = cmd_graph(a->target, a->output, a->format, cl.base); });
}

}  // namespace fabemu::cli
