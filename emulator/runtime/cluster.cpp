// Finding this machine in a lab's machine list and its underlay; the launcher's lab records.
#include "runtime/cluster.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "plan/partition.h"
#include "scenario/loader.h"
#include "util/files.h"
#include "util/json.h"

namespace fabemu {
namespace {

Result<Ipv4> resolve(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (int err = ::getaddrinfo(name.c_str(), nullptr, &hints, &res); err != 0)
    return make_error("machine " + name + " does not resolve to an IPv4 address (" +
                          ::gai_strerror(err) + "); the underlay is what machine names resolve to",
                      EINVAL);
  const auto* in = reinterpret_cast<const sockaddr_in*>(res->ai_addr);
  const Ipv4 ip{ntohl(in->sin_addr.s_addr)};
  ::freeaddrinfo(res);
  return ip;
}

std::string state_dir() {
  if (const char* d = std::getenv("FABEMU_STATE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/fabemu";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.local/state/fabemu";
}

}  // namespace

Result<MachinePart> this_machine_part(const std::vector<std::string>& machines,
                                      const std::string& shared_dir) {
  MachinePart part;
  part.machines = machines;
  part.shared_dir = shared_dir;
  std::string me;
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) {
    me = n;
  } else {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    me = host;
  }
  const auto at = std::find(machines.begin(), machines.end(), me);
  if (at == machines.end())
    return make_error("this machine (" + me + ") is not one of the lab's machines", EINVAL);
  part.index = static_cast<int>(at - machines.begin());
  for (const std::string& m : machines) {
    auto ip = resolve(m);
    if (!ip) return ip.error();
    part.underlay.push_back(*ip);
  }
  // The device that holds this machine's address carries its tunnels.
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) != 0) return errno_error("listing this machine's interfaces");
  const Ipv4 mine = part.underlay[part.index];
  for (ifaddrs* i = ifs; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
        ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr) == mine.v)
      part.underlay_dev = i->ifa_name;
  ::freeifaddrs(ifs);
  if (part.underlay_dev.empty())
    return make_error("no interface of " + me + " holds its address " + mine.str() +
                          " (what its name resolves to): the underlay must be reachable there",
                      EINVAL);
  return part;
}

Result<uint32_t> underlay_mtu(const MachinePart& part) {
  auto text = read_file("/sys/class/net/" + part.underlay_dev + "/mtu");
  if (!text) return text.error().context("the underlay's MTU");
  return static_cast<uint32_t>(std::strtoul(text->c_str(), nullptr, 10));
}

std::string cluster_record_path(const std::string& lab) {
  return state_dir() + "/clusters/" + lab + ".json";
}

std::string cluster_shared_dir() {
  if (const char* d = std::getenv("FABEMU_CLUSTER_SHARED"); d && *d) return d;
  return state_dir() + "/shared";
}

Result<void> write_cluster_record(const ClusterRecord& r) {
  const std::string path = cluster_record_path(r.lab);
  FABEMU_TRY(make_dirs(path.substr(0, path.rfind('/'))));
  const Json j = {{"lab", r.lab},
                  {"launcher", r.launcher},
                  {"machines", r.machines},
                  {"pool", r.pool},
                  {"scenario", r.scenario},
                  {"shared_dir", r.shared_dir},
                  {"time_scale", r.time_scale},
                  {"time_scale_why", r.time_scale_why}};
  return write_file(path, json_text(j) + "\n");
}

Result<ClusterRecord> read_cluster_record(const std::string& lab) {
  const std::string path = cluster_record_path(lab);
  auto text = read_file(path);
  if (!text)
    return make_error(
        "no lab named '" + lab + "' was spread over machines from here (" + path + ")", ENOENT);
  const Json j = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  try {
    ClusterRecord r;
    r.lab = j.at("lab").get<std::string>();
    r.launcher = j.at("launcher").get<std::string>();
    r.machines = j.at("machines").get<std::vector<std::string>>();
    r.pool = j.at("pool").get<int>();
    r.scenario = j.value("scenario", "");
    r.shared_dir = j.value("shared_dir", "");
    r.time_scale = j.value("time_scale", 1.0);
    r.time_scale_why = j.value("time_scale_why", "");
    return r;
  } catch (const Json::exception&) {
    return make_error(path + ": not a lab record", EINVAL);
  }
}

Result<LabModel> cluster_model(const ClusterRecord& r) {
  auto scenario = load_scenario_file(r.scenario);
  if (!scenario) return scenario.error();
  auto model = build_model(*scenario, r.pool);
  if (!model) return model.error();
  auto placement = partition(*model, static_cast<int>(r.machines.size()));
  if (!placement) return placement.error();
  model->part = MachinePart{-1, r.machines, {}, "", r.shared_dir, std::move(*placement)};
  model->time_scale.factor = r.time_scale;
  model->time_scale_why = r.time_scale_why;
  return model;
}

void remove_cluster_record(const std::string& lab) {
  std::error_code ec;
  std::filesystem::remove(cluster_record_path(lab), ec);
}

}  // namespace fabemu
