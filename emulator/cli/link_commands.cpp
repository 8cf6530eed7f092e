// `link set/down/up`: live changes to the link model of a running lab (session::change_link).
#include <cstdio>

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

}  // namespace fabemu::cli
