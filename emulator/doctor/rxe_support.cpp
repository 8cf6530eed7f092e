// The rxe verdict for `up`: RDMA netlink present, then the traffic probe, cached per boot.
#include "doctor/rxe_support.h"

#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "apply/rdma.h"
#include "doctor/rxe_traffic.h"
#include "util/files.h"
#include "util/netlink.h"

namespace fabemu::doctor {
namespace {

// What the verdict holds for: this boot, with rdma_rxe loaded or not.
std::string cache_key() {
  return boot_id() + (path_exists("/sys/module/rdma_rxe") ? " rdma_rxe" : " no-rdma_rxe");
}

}  // namespace

std::optional<RxeSupport> cached_rxe_support(const std::string& cache_path) {
  auto text = read_file(cache_path);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string key, verdict, reason;
  if (!std::getline(in, key) || !std::getline(in, verdict) || key != "key " + cache_key())
    return std::nullopt;
  std::getline(in, reason);
  if (verdict != "usable 1" && verdict != "usable 0") return std::nullopt;
  return RxeSupport{verdict == "usable 1", true,
                    reason.rfind("reason ", 0) == 0 ? reason.substr(7) : ""};
}

RxeSupport rxe_support(const std::string& cache_path, bool fresh) {
  if (auto rdma = RdmaNetlink::open(); !rdma)
    return {false, true,
            "this kernel has no rdma_rxe: no RDMA subsystem (" + describe(rdma.error()) + ")"};
  if (!fresh)
    if (auto cached = cached_rxe_support(cache_path)) return *cached;
  RxeTraffic t = probe_rxe_traffic();
  RxeSupport s{t.status == ProbeStatus::Yes, true, t.detail};
  // Partial: the probe could not tell (tools missing, namespaces failed); ask again next time.
  if (t.status != ProbeStatus::Yes && t.status != ProbeStatus::No) {
    s.decided = false;
    return s;
  }
  std::string reason = s.reason;
  for (char& c : reason)
    if (c == '\n') c = ' ';
  const std::string text =
      "key " + cache_key() + "\nusable " + (s.usable ? "1" : "0") + "\nreason " + reason + "\n";
  // Written aside and renamed: a reader never sees half a verdict. Best effort.
  const std::string tmp = cache_path + "." + std::to_string(::getpid());
  if (make_dirs(cache_path.substr(0, cache_path.find_last_of('/')))) {
    if (write_file(tmp, text) && std::rename(tmp.c_str(), cache_path.c_str()) != 0)
      ::unlink(tmp.c_str());
  }
  return s;
}

}  // namespace fabemu::doctor
