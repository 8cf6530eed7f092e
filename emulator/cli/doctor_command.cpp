// `doctor`: what this kernel can do for a lab (session::doctor), as a table or JSON.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"

namespace fabemu::cli {

int cmd_doctor(bool json, bool calibrate, const std::string& run_root) {
  TerminalObserver observer(/*quiet=*/false);  // calibration's trials, on stderr
  const session::DoctorOutcome d = session::doctor(calibrate, run_root, observer);
  if (json)
    print_json(d.to_json());
  else
    std::printf("%s", format_doctor_table(d.kernel, d.probes).c_str());
  return kExitOk;
}

void add_doctor_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    bool json = false, calibrate = false, vm = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("doctor", "What this kernel and machine can emulate");
  cmd->add_flag("--json", a->json, "The result as one JSON object (docs/json.md)");
  cmd->add_flag("--calibrate", a->calibrate,
                "Measure how much emulated traffic this machine carries in real time (a small "
                "lab, ~30 s), as time_scale: auto does once per boot");
  cmd->add_flag("--vm", a->vm, kVmHelp);
  cmd->callback([a, &cl] {
    cl.exit = a->vm ? cmd_in_vm(cl.without("--vm"), "")
                    : cmd_doctor(a->json, a->calibrate, cl.base.run_root);
  });
}

}  // namespace fabemu::cli
