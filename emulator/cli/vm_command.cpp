// `run --vm` and `doctor --vm`: the same command on the VM lane's kernel, by scripts/vm-run.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "cli/commands.h"
#include "util/process.h"

namespace fabemu::cli {
namespace {

namespace fs = std::filesystem;

// vm-run beside this binary: $FABEMU_VM_RUN, the source tree's (build/emulator/fabemu ->
// scripts/vm-run) or the package's (/usr/bin/fabemu -> /usr/share/fabemu/scripts/vm-run).
std::string find_vm_run() {
  if (const char* env = std::getenv("FABEMU_VM_RUN"); env && *env) return env;
  const fs::path dir = fs::path(self_exe()).parent_path();
  for (const fs::path& p : {dir / "../../scripts/vm-run", dir / "../share/fabemu/scripts/vm-run"})
    if (::access(p.c_str(), X_OK) == 0) return fs::weakly_canonical(p).string();
  return "";
}

// The guest's argv: the report goes to vm-run's shared out directory.
std::vector<std::string> guest_argv(std::vector<std::string> args, bool report) {
  std::vector<std::string> out = {self_exe()};
  for (size_t i = 0; i < args.size(); ++i) {
    if (report && args[i] == "--report" && i + 1 < args.size()) {
      ++i;
      continue;
    }
    if (report && args[i].rfind("--report=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  if (report) out.insert(out.end(), {"--report", "/fabemu-vm/report"});
  return out;
}

}  // namespace

int cmd_in_vm(std::vector<std::string> args, const std::string& report_dir) {
  const std::string vm_run = find_vm_run();
  if (vm_run.empty()) {
    print_error(
        "--vm: scripts/vm-run was not found beside this fabemu (a source build or the package "
        "has it; FABEMU_VM_RUN names another)");
    return kExitFailed;
  }
  char tmpl[] = "/tmp/fabemu-vm-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    print_error(std::string("--vm: making a directory for the VM's output: ") +
                std::strerror(errno));
    return kExitFailed;
  }
  const std::string out = tmpl;
  const bool report = !report_dir.empty();
  std::vector<std::string> argv = {vm_run, "--out", out, "--"};
  for (std::string& a : guest_argv(std::move(args), report)) argv.push_back(std::move(a));
  std::fprintf(stderr,
               "fabemu: --vm: running in the VM lane's kernel (scripts/vm-run; KVM where "
               "this machine has it, else software emulation)\n");
  ProcessSpec spec;
  spec.argv = argv;
  auto proc = Process::start(spec);
  if (!proc) {
    print_error("--vm: starting " + vm_run + ": " + proc.error().what());
    return kExitFailed;
  }
  const int status = proc->wait();
  std::error_code ec;
  if (report && fs::exists(out + "/report", ec)) {
    fs::create_directories(fs::path(report_dir).parent_path(), ec);
    fs::rename(out + "/report", report_dir, ec);
    if (ec) {  // another filesystem
      ec.clear();
      fs::copy(out + "/report", report_dir, fs::copy_options::recursive, ec);
    }
    if (ec)
      print_error("--vm: the report stays in " + out + "/report (moving it to " + report_dir +
                  ": " + ec.message() + ")");
    else
      std::printf("report (from the VM): %s/report.html\n", report_dir.c_str());
  }
  if (status == 125)  // vm-run or the VM failed: its console log says why
    print_error("--vm: the VM failed; its console and logs are in " + out);
  else if (!ec)
    fs::remove_all(out, ec);
  return status;
}

}  // namespace fabemu::cli
