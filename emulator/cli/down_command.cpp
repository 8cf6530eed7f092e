// `down` (session::down) as the terminal shows it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"

namespace fabemu::cli {

int render_down(const session::DownOutcome& out, bool json) {
  if (json) {
    print_json(out.to_json());
  } else {
    for (const auto& l : out.labs) {
      if (l.agent_stopped)
        std::printf("lab %s: stopped the agent still working on it here\n", l.lab.c_str());
      if (l.error)
        print_error(l.error->what());
      else if (l.machines)
        std::printf("lab %s down on %zu machines in %.2f s\n", l.lab.c_str(), l.machines,
                    l.seconds);
      else
        std::printf("lab %s down in %.2f s\n", l.lab.c_str(), l.seconds);
    }
    if (!out.kernel_note.empty()) print_error("down: " + out.kernel_note);
    if (out.kernel_seconds)
      std::printf("kernel done freeing %s in %.2f s\n",
                  out.labs.size() > 1 ? "the labs" : "the lab", *out.kernel_seconds);
  }
  const auto failure = out.failure();
  return failure ? exit_code(*failure) : kExitOk;
}

void add_down_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    std::vector<std::string> labs;
    bool all = false, json = false, no_wait = false;
    std::string on;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("down", "Remove a lab (also after a crash)");
  cmd->add_option("lab", a->labs, "Lab names");
  cmd->add_flag("--all", a->all, "Every fabemu lab on this machine");
  auto* on = cmd->add_option("--on", a->on, kOnHelp)->excludes("--all");
  cmd->add_flag("--json", a->json, "The result as one JSON object (docs/json.md)");
  cmd->add_flag("--no-wait", a->no_wait,
                "Return before the kernel has freed the lab's namespaces (it goes on in the "
                "background, and a lab brought up meanwhile waits for its lock)")
      ->excludes(on);
  cmd->callback([a, &cl] {
    auto out = session::down({a->labs, a->all, !a->no_wait, a->on}, cl.base);
    cl.exit = out ? render_down(*out, a->json) : report_error(out.error());
  });
}

}  // namespace fabemu::cli
