// `link set/down/up`: live changes to the link model of a running lab (session::change_link).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"

namespace fabemu::cli {

session::LinkRequest link_request(const LinkSetArgs& a) {
  session::LinkRequest r;
  r.lab = a.lab;
  r.link = a.link;
  for (const auto& [key, text] : a.shape_options())
    if (!text->empty()) r.settings.emplace_back(std::string(key), *text);
  r.reorder = a.reorder;
  r.down = a.down;
  r.reroute = a.reroute;
  r.accept_degraded = a.accept_degraded;
  r.on = a.on;
  return r;
}

int cmd_link_set(const LinkSetArgs& args, const LabPaths& base) {
  auto done = session::change_link(link_request(args), base);
  if (!done) return report_error(done.error());
  if (args.json) {
    print_json(done->to_json());
    return kExitOk;
  }
  for (const LinkChange& c : done->changes) {
    std::string before = c.before.str(), after = c.after.str();
    std::printf("%s %s: %s -> %s%s\n", args.lab.c_str(), c.name.c_str(),
                before.empty() ? "unshaped" : before.c_str(),
                after.empty() ? "unshaped" : after.c_str(),
                c.attached_now ? " (link model attached)" : "");
  }
  if (done->rerouted)
    std::printf("%s %s: %s\n", args.lab.c_str(), args.link.c_str(), done->rerouted->c_str());
  return kExitOk;
}

void add_link_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    LinkSetArgs link;
    bool reroute = false, no_reroute = false;  // --reroute is the default, said explicitly
    bool reorder = false, no_reorder = false;
  };
  auto a = std::make_shared<Args>();
  LinkSetArgs& link = a->link;
  auto* cmd = app.add_subcommand("link", "Change a running lab's links live");
  cmd->require_subcommand(1);
  auto* set = cmd->add_subcommand(
      "set", "Change the shape of a link (a:b both directions, a>b one); unnamed settings stay");
  auto* down = cmd->add_subcommand(
      "down",
      "Take a link down: it drops everything, and (--reroute, the default, as a `down` in the "
      "fault timeline) the switches' routes move off it as a routing protocol would move them; "
      "--no-reroute leaves them: a silent blackhole for the flows hashed onto it. A BGP lab's "
      "routers reroute by themselves (BFD)");
  auto* up = cmd->add_subcommand(
      "up", "Bring a link back up with its shape; with --reroute (the default) the routes return");
  for (auto* c : {set, down, up}) {
    c->add_option("lab", link.lab, "Lab name")->required();
    c->add_option("link", link.link, "a:b or a>b, e.g. leaf1:spine2")->required();
    c->add_option("--on", link.on, kOnHelp);
    c->add_flag("--json", link.json, "The result as one JSON object (docs/json.md)");
  }
  for (auto* c : {down, up}) {
    c->add_flag("--reroute", a->reroute,
                "Move the switches' routes off the link (back on for up): the default");
    c->add_flag("--no-reroute", a->no_reroute, "Leave the routes as they are")
        ->excludes("--reroute");
  }
  set->add_option("--rate", link.rate, "e.g. 10gbit; 'unlimited' lifts the limit");
  set->add_option("--delay", link.delay, "Added one-way delay, e.g. 50us; 0 for none");
  set->add_option("--jitter", link.jitter, "Uniform +-jitter, e.g. 10us; 0 for none");
  set->add_option("--loss", link.loss, "Independent loss, e.g. 0.1% or 0.001; 0 for none");
  set->add_option("--loss-burst", link.loss_burst,
                  "Gilbert-Elliott loss p,r[,loss_bad[,loss_good]], e.g. 1%,25%");
  set->add_option("--queue", link.queue, "Queue limit as time (200us) or size (64K)");
  set->add_option("--ecn-threshold,--ecn", link.ecn,
                  "Mark CE above this queue delay, e.g. 40us; 0 for off");
  set->add_option("--ecn-red", link.ecn_red,
                  "RED marking kmin,kmax,pmax of the backlog, e.g. 400K,1600K,20%; off for none");
  set->add_option("--pfc", link.pfc,
                  "PFC of the lossless class: xoff,xon[,watchdog] of the receiving end's "
                  "buffer, e.g. 200K,150K,1ms; off to turn it off");
  set->add_option("--corrupt", link.corrupt,
                  "Frames damaged on the wire (the next hop drops them), e.g. 0.1%");
  set->add_option("--duplicate", link.duplicate, "Frames sent twice, e.g. 0.1%");
  set->add_flag("--reorder", a->reorder, "Jitter may reorder packets (the default)");
  set->add_flag("--no-reorder", a->no_reorder, "Jitter keeps packets in order")
      ->excludes("--reorder");
  set->add_flag("--accept-degraded", link.accept_degraded,
                "On a policer lab (no fq), set the rest even though delay/jitter are not added");
  auto run = [a, &cl](std::optional<bool> down) {
    LinkSetArgs& l = a->link;
    if (a->reorder || a->no_reorder) l.reorder = a->reorder;
    l.down = down;
    l.reroute = !a->no_reroute;
    cl.exit = cmd_link_set(l, cl.base);
  };
  set->callback([run] { run(std::nullopt); });
  down->callback([run] { run(true); });
  up->callback([run] { run(false); });
}

}  // namespace fabemu::cli
