// fabemu command line: parses arguments (CLI11) and dispatches to the commands.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "scenario/loader.h"

using namespace fabemu;

int main(int argc, char** argv) {
  // mpirun's rsh agent: `fabemu rsh [--run-dir DIR] LAB HOST WORDS...`, parsed by hand because
  // the words are a remote command line full of options of its own.
  if (argc >= 2 && std::string_view(argv[1]) == "rsh")
    return cli::cmd_rsh(std::vector<std::string>(argv + 2, argv + argc));
  CLI::App app{
      "fabemu: emulate an AI cluster fabric in the kernel (namespaces, routed Clos, ECMP).\n"
      "Exit codes: 0 ok, 1 failed, 2 bad input, 3 no such lab, 4 needs root, 5 not possible on "
      "this machine; `exec` returns the command's own."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fabemu " FABEMU_VERSION);
  LabPaths base;
  app.add_option("--run-dir", base.run_root, "Where labs keep their journals")
      ->capture_default_str()
      ->group("");

  // What `up` and `run` share: the scenario and how the lab is built from it.
  auto add_build_options = [](CLI::App* cmd, cli::UpArgs& a) {
    cmd->add_option("scenario", a.scenario, "Scenario YAML file")->required();
    cmd->add_option("--lab", a.lab, "Lab name (default: the scenario's name)");
    cmd->add_flag("-q,--quiet", a.quiet,
                  "No progress and no notes: the one-line summary (and --timings) only");
    cmd->add_flag("--accept-degraded", a.accept_degraded,
                  "On a kernel without sch_fq, build anyway: links keep rate, loss and ECN "
                  "(policer) but get no delay or jitter");
    cmd->add_option("--time-scale", a.time_scale,
                    "Run the fabric N times slower than the real one the scenario describes "
                    "(time dilation; every figure printed is the real fabric's), or auto: N "
                    "from this machine's calibrated capacity. Overrides the scenario's "
                    "time_scale");
    cmd->add_option("--on", a.on,
                    "slurm: spread the lab over the machines of this Slurm allocation (one "
                    "fabemu agent per machine, cut links as VXLAN tunnels; docs/cluster.md)");
    cmd->add_flag("--netns-names", a.netns_names,
                  "Give `ip netns` a name for every node (/run/netns/fabemu-LAB-NODE), also in "
                  "a lab of more than 128 namespaces (fabemu exec never needs them)");
  };
  // The same for the commands that reach a running lab.
  const std::string on_help = "slurm: the lab was spread over the machines of a Slurm allocation";

  cli::UpArgs up;
  auto* up_cmd = app.add_subcommand("up", "Build the fabric of a scenario and leave it running");
  add_build_options(up_cmd, up);
  bool up_vm = false;
  up_cmd->add_flag("--vm", up_vm, "Not for up: see run --vm");
  up_cmd->add_flag("--dry-run", up.dry_run, "Print the plan; touch nothing");
  up_cmd
      ->add_option("--machines", up.machines,
                   "With --dry-run: how the lab would be spread over this many machines (the "
                   "nodes of each, the links cut into VXLAN tunnels, the load)")
      ->check(CLI::Range(1, 4096));
  up_cmd->add_flag("--timings", up.timings, "Print the time each phase took");
  up_cmd->add_flag("--json", up.json, "The result as one JSON object (docs/json.md)")
      ->excludes("--dry-run");

  std::vector<std::string> down_labs;
  bool down_all = false;
  auto* down_cmd = app.add_subcommand("down", "Remove a lab (also after a crash)");
  down_cmd->add_option("lab", down_labs, "Lab names");
  down_cmd->add_flag("--all", down_all, "Every fabemu lab on this machine");
  std::string down_on;
  auto* down_on_opt = down_cmd->add_option("--on", down_on, on_help)->excludes("--all");
  bool down_json = false;
  down_cmd->add_flag("--json", down_json, "The result as one JSON object (docs/json.md)")
      ->excludes(down_on_opt);
  bool down_no_wait = false;
  down_cmd
      ->add_flag("--no-wait", down_no_wait,
                 "Return before the kernel has freed the lab's namespaces (it goes on in the "
                 "background, and a lab brought up meanwhile waits for its lock)")
      ->excludes(down_on_opt);

  std::string status_lab;
  bool status_json = false;
  auto* status_cmd = app.add_subcommand("status", "Nodes, links, addresses and counters of a lab");
  status_cmd->add_option("lab", status_lab, "Lab name (none: list labs)");
  status_cmd->add_flag("--json", status_json, "Machine-readable output");
  cli::StatusView status_view;
  status_cmd->add_option("--node", status_view.nodes,
                         "Only this node and its links (a name or a glob: 'leaf1*'; repeatable)");
  status_cmd->add_option("--link", status_view.links,
                         "Only this link (a:b or a glob: 'leaf1:*'; repeatable)");
  status_cmd->add_flag("--all", status_view.all,
                       "Every node and link, also of a big lab (more than 64 of either: by "
                       "default a summary by tier)");
  std::string status_on;
  status_cmd->add_option("--on", status_on, on_help);

  std::string exec_target;
  std::vector<std::string> exec_argv;
  bool exec_all = false, exec_no_tag = false, exec_json = false;
  auto* exec_cmd = app.add_subcommand(
      "exec",
      "Run a command inside an emulated node: exec LAB:NODE -- CMD, or exec LAB --all -- CMD");
  exec_cmd->add_option("target", exec_target, "LAB:NODE, or LAB with --all")->required();
  exec_cmd->add_option("command", exec_argv, "Command and arguments, after --")->required();
  exec_cmd->add_flag("--all", exec_all, "One process per host, with RANK/WORLD_SIZE set");
  exec_cmd->add_flag("--no-tag", exec_no_tag, "With --all: do not prefix lines with [host]");
  exec_cmd->add_flag("--json", exec_json,
                     "With --all: one JSON object at the end, each host's exit status and output "
                     "(stdout and stderr as written) instead of the tagged lines");
  std::string exec_on;
  exec_cmd->add_option("--on", exec_on, on_help);
  std::string exec_clock;
  exec_cmd
      ->add_option("--clock", exec_clock,
                   "fabric: the command's own clocks, sleeps and timeouts run in the real "
                   "fabric's time (a dilated lab; libfaketime); wall: the machine's. Default: "
                   "the scenario's hosts.clock")
      ->check(CLI::IsMember({"fabric", "wall"}));

  cli::LinkSetArgs link;
  auto* link_cmd = app.add_subcommand("link", "Change a running lab's links live");
  link_cmd->require_subcommand(1);
  auto* link_set = link_cmd->add_subcommand(
      "set", "Change the shape of a link (a:b both directions, a>b one); unnamed settings stay");
  auto* link_down = link_cmd->add_subcommand(
      "down",
      "Take a link down: it drops everything, and (--reroute, the default, as a `down` in the "
      "fault timeline) the switches' routes move off it as a routing protocol would move them; "
      "--no-reroute leaves them: a silent blackhole for the flows hashed onto it. A BGP lab's "
      "routers reroute by themselves (BFD)");
  auto* link_up = link_cmd->add_subcommand(
      "up", "Bring a link back up with its shape; with --reroute (the default) the routes return");
  for (auto* c : {link_set, link_down, link_up}) {
    c->add_option("lab", link.lab, "Lab name")->required();
    c->add_option("link", link.link, "a:b or a>b, e.g. leaf1:spine2")->required();
    c->add_option("--on", link.on, on_help);
    c->add_flag("--json", link.json,
                "The result as one JSON object (docs/json.md); with --on, one per machine");
  }
  bool reroute = false, no_reroute = false;  // --reroute is the default, said explicitly
  for (auto* c : {link_down, link_up}) {
    c->add_flag("--reroute", reroute,
                "Move the switches' routes off the link (back on for up): the default");
    c->add_flag("--no-reroute", no_reroute, "Leave the routes as they are")->excludes("--reroute");
  }
  link_set->add_option("--rate", link.rate, "e.g. 10gbit; 'unlimited' lifts the limit");
  link_set->add_option("--delay", link.delay, "Added one-way delay, e.g. 50us; 0 for none");
  link_set->add_option("--jitter", link.jitter, "Uniform +-jitter, e.g. 10us; 0 for none");
  link_set->add_option("--loss", link.loss, "Independent loss, e.g. 0.1% or 0.001; 0 for none");
  link_set->add_option("--loss-burst", link.loss_burst,
                       "Gilbert-Elliott loss p,r[,loss_bad[,loss_good]], e.g. 1%,25%");
  link_set->add_option("--queue", link.queue, "Queue limit as time (200us) or size (64K)");
  link_set->add_option("--ecn-threshold,--ecn", link.ecn,
                       "Mark CE above this queue delay, e.g. 40us; 0 for off");
  link_set->add_option("--pfc", link.pfc,
                       "PFC of the lossless class: xoff,xon[,watchdog] of the receiving end's "
                       "buffer, e.g. 200K,150K,1ms; off to turn it off");
  link_set->add_option("--corrupt", link.corrupt,
                       "Frames damaged on the wire (the next hop drops them), e.g. 0.1%");
  link_set->add_option("--duplicate", link.duplicate, "Frames sent twice, e.g. 0.1%");
  bool reorder = false, no_reorder = false;
  link_set->add_flag("--reorder", reorder, "Jitter may reorder packets (the default)");
  link_set->add_flag("--no-reorder", no_reorder, "Jitter keeps packets in order")
      ->excludes("--reorder");
  link_set->add_flag("--accept-degraded", link.accept_degraded,
                     "On a policer lab (no fq), set the rest even though delay/jitter are not "
                     "added");

  session::HostRequest host;
  bool host_json = false;
  auto* host_cmd = app.add_subcommand("host", "Host faults on a running lab, by hand");
  host_cmd->require_subcommand(1);
  std::vector<CLI::App*> host_actions = {
      host_cmd->add_subcommand("crash", "Kill every process in the host at once, links down"),
      host_cmd->add_subcommand("restart", "Bring a crashed host's links back up"),
      host_cmd->add_subcommand("freeze", "Stop every task of the host (cgroup freezer)"),
      host_cmd->add_subcommand("thaw", "Let a frozen host run again")};
  for (auto* c : host_actions) {
    c->add_option("lab", host.lab, "Lab name")->required();
    c->add_option("host", host.host, "Host name, e.g. h3")->required();
    c->add_flag("--json", host_json, "The result as one JSON object (docs/json.md)");
    c->callback([c, &host] { host.action = c->get_name(); });
  }

  cli::PerfArgs perf;
  auto* perf_cmd = app.add_subcommand(
      "perf",
      "Benchmark between two hosts: perftest over their rxe devices (server started first, "
      "client against its address), or ucx_perftest: perf LAB SERVER CLIENT [-- TOOL ARGS]");
  perf_cmd->add_option("lab", perf.lab, "Lab name")->required();
  perf_cmd->add_option("server", perf.server, "Host running the server side")->required();
  perf_cmd->add_option("client", perf.client, "Host running the client side")->required();
  perf_cmd
      ->add_option("--tool", perf.tool,
                   "ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_send_lat or "
                   "ucx_perftest")
      ->capture_default_str();
  perf_cmd->add_option("--timeout", perf.timeout_s, "Seconds for the whole run")
      ->capture_default_str();
  perf_cmd->add_option("extra", perf.extra, "More arguments for the tool, after --");
  perf_cmd->add_flag("--json", perf.json,
                     "The result as one JSON object (docs/json.md): perftest's table as measured "
                     "and in the real fabric's units, the tool's output");

  // Handled before parsing (its words are a remote command line); listed here for --help.
  app.add_subcommand("rsh",
                     "mpirun's remote shell, no sshd: `fabemu exec LAB:h1 -- mpirun --mca "
                     "plm_rsh_agent 'fabemu rsh LAB' --mca plm_rsh_no_tree_spawn 1 --mca routed "
                     "direct --host h1,h2,... PROGRAM` starts a daemon in every host (`fabemu rsh "
                     "--help`)");

  std::string predict_lab, predict_transport = "tcp";
  auto* predict_cmd = app.add_subcommand(
      "predict",
      "The link model's prediction for each collective (Gloo's algorithms over the fabric's "
      "routes and current link shapes): busbw at 64K to 256M, the bottleneck");
  predict_cmd->add_option("lab", predict_lab, "Lab name")->required();
  bool predict_json = false;
  predict_cmd->add_flag("--json", predict_json,
                        "The model itself, as JSON (what fabemu-collective --predict reads)");
  predict_cmd->add_option("--transport", predict_transport, "tcp or ibverbs")
      ->capture_default_str();

  bool doctor_json = false, doctor_calibrate = false;
  auto* doctor_cmd = app.add_subcommand("doctor", "What this kernel and machine can emulate");
  doctor_cmd->add_flag("--json", doctor_json, "Machine-readable output");
  doctor_cmd->add_flag("--calibrate", doctor_calibrate,
                       "Measure how much emulated traffic this machine carries in real time "
                       "(a small lab, ~30 s), as time_scale: auto does once per boot");
  const std::string vm_help =
      "Run it in the VM lane's kernel instead (scripts/vm-run: Debian's newest, with rxe, fq, "
      "netem, BPF qdiscs and the OVS module; KVM where this machine has it, else software "
      "emulation)";
  bool doctor_vm = false, run_vm = false;
  doctor_cmd->add_flag("--vm", doctor_vm, vm_help);

  cli::UpArgs run;
  cli::RunArgs run_opts;
  auto* run_cmd = app.add_subcommand(
      "run",
      "Build the fabric, check it, run the workload while the fault timeline plays, report "
      "(terminal, JSON lines, HTML), check the scenario's expectations, tear down");
  add_build_options(run_cmd, run);
  run_cmd->add_flag("--keep", run_opts.keep, "Leave the lab up afterwards");
  run_cmd->add_option("--report", run_opts.report_dir,
                      "Directory for report.html, report.jsonl and topology.svg (default: "
                      "fabemu-reports/LAB-DATE-TIME)");
  run_cmd->add_flag("--vm", run_vm, vm_help + "; the report comes back to this machine")
      ->excludes("--on")
      ->excludes("--keep");
  run_cmd
      ->add_flag("--json", run_opts.json,
                 "The result as one JSON object on stdout (docs/json.md): the report's records "
                 "but the telemetry samples; the run's text goes to stderr")
      ->excludes("--on")
      ->excludes("--vm");

  // What a launcher starts on each machine of a lab across machines (not for users).
  cli::AgentArgs agent;
  std::string agent_machines;
  auto* agent_cmd = app.add_subcommand("agent", "One machine's part of a lab across machines");
  agent_cmd->group("");
  agent_cmd->add_option("action", agent.action, "probe, up, reach or run")->required();
  agent_cmd->add_option("scenario", agent.up.scenario, "probe, up: the scenario file");
  agent_cmd->add_option("--lab", agent.up.lab, "Lab name");
  agent_cmd->add_option("--machines", agent_machines, "The allocation's machines, m1,m2,...");
  agent_cmd->add_option("--shared-dir", agent.up.shared_dir, "The directory every machine sees");
  agent_cmd->add_option("--pool", agent.up.pool, "up: the address pool the machines agreed on");
  agent_cmd->add_option("--time-scale", agent.up.time_scale, "probe, up: as `up`'s");
  agent_cmd->add_flag("--accept-degraded", agent.up.accept_degraded, "probe, up: as `up`'s");
  agent_cmd->add_option("--run-id", agent.run_id, "run: the Gloo rendezvous prefix");
  agent_cmd->add_option("--start-at", agent.start_at_ns, "run: the start, ns of CLOCK_REALTIME");
  agent_cmd->add_option("--out", agent.out, "run: the directory for the machine's part");

  std::string graph_target, graph_out = "-", graph_format;
  auto* graph_cmd = app.add_subcommand(
      "graph", "The topology as a picture: SVG or Graphviz DOT, of a lab or a scenario file");
  graph_cmd->add_option("target", graph_target, "Lab name, or a scenario YAML file")->required();
  graph_cmd->add_option("-o,--output", graph_out, "Output file (.svg, .dot or .json; - for stdout)")
      ->capture_default_str();
  graph_cmd->add_option("--format", graph_format,
                        "svg, dot or json (docs/json.md) (default: from -o, else svg)");
  graph_cmd->add_flag_callback(
      "--json", [&graph_format] { graph_format = "json"; }, "The same as --format json");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? cli::kExitOk : cli::kExitBadInput;
  }

  // --vm: the same command line, without --vm, inside the VM.
  std::vector<std::string> vm_args;
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) != "--vm") vm_args.emplace_back(argv[i]);
  if (doctor_cmd->parsed() && doctor_vm) return cli::cmd_in_vm(vm_args, "");
  if (up_cmd->parsed() && up_vm) {
    cli::print_error(
        "up --vm: a lab in the VM lives only as long as the command the VM runs; `fabemu run "
        "SCENARIO --vm` runs the whole job there, `scripts/vm-run -- CMD...` any commands");
    return cli::kExitBadInput;
  }
  if (run_cmd->parsed() && run_vm) {
    std::string lab = run.lab;
    if (lab.empty()) {
      auto s = load_scenario_file(run.scenario);
      if (!s) {
        cli::print_error(s.error().what());
        return cli::kExitBadInput;
      }
      lab = s->name;
    }
    return cli::cmd_in_vm(
        vm_args, run_opts.report_dir.empty() ? cli::default_report_dir(lab) : run_opts.report_dir);
  }
  if (up_cmd->parsed())
    return up.on.empty() || up.dry_run ? cli::cmd_up(up, base) : cli::cluster_up(up, base);
  if (down_cmd->parsed())
    return down_on.empty() ? cli::cmd_down(down_labs, down_all, base, !down_no_wait, down_json)
                           : cli::cluster_down(down_labs, down_on, base);
  if (status_cmd->parsed())
    return status_on.empty() || status_lab.empty()
               ? cli::cmd_status(status_lab, status_json, status_view, base)
               : cli::cluster_status(status_lab, status_json, status_view, status_on, base);
  // CLI11 keeps the "--" separator among the positionals.
  if (!exec_argv.empty() && exec_argv.front() == "--") exec_argv.erase(exec_argv.begin());
  if (exec_cmd->parsed())
    return exec_on.empty() ? cli::cmd_exec(exec_target, exec_all, exec_no_tag, exec_json, exec_argv,
                                           exec_clock, base)
                           : cli::cluster_exec(exec_target, exec_all, exec_no_tag, exec_argv,
                                               exec_clock, exec_on, base);
  if (doctor_cmd->parsed()) return cli::cmd_doctor(doctor_json, doctor_calibrate, base.run_root);
  if (predict_cmd->parsed())
    return cli::cmd_predict(predict_lab, predict_transport, predict_json, base);
  if (!perf.extra.empty() && perf.extra.front() == "--") perf.extra.erase(perf.extra.begin());
  if (perf_cmd->parsed()) return cli::cmd_perf(perf, base);
  if (host_cmd->parsed()) return cli::cmd_host(host, host_json, base);
  if (reorder || no_reorder) link.reorder = reorder;
  if (link_down->parsed()) link.down = true;
  if (link_up->parsed()) link.down = false;
  link.reroute = !no_reroute;
  if (link_cmd->parsed())
    return link.on.empty() ? cli::cmd_link_set(link, base) : cli::cluster_link_set(link, base);
  if (run_cmd->parsed())
    return run.on.empty() ? cli::cmd_run(run, run_opts, base)
                          : cli::cluster_run(run, run_opts, base);
  if (agent_cmd->parsed()) {
    for (size_t at = 0; !agent_machines.empty() && at <= agent_machines.size();) {
      const size_t comma = std::min(agent_machines.find(',', at), agent_machines.size());
      agent.up.cluster.push_back(agent_machines.substr(at, comma - at));
      at = comma + 1;
    }
    agent.lab = agent.up.lab;
    return cli::cmd_agent(agent, base);
  }
  if (graph_cmd->parsed()) return cli::cmd_graph(graph_target, graph_out, graph_format, base);
  return cli::kExitBadInput;
}
