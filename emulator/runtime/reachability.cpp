// Native pinger: raw ICMP sockets opened inside each host namespace, one thread per host.
#include "runtime/reachability.h"

#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "plan/plan.h"
#include "util/netns.h"

namespace fabemu {
namespace {

uint16_t checksum(const void* data, size_t len) {
  uint32_t sum = 0;
  auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i + 1 < len; i += 2) sum += (p[i] << 8) | p[i + 1];
  if (len & 1) sum += p[len - 1] << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return htons(static_cast<uint16_t>(~sum));
}

using Clock = std::chrono::steady_clock;

// Pings `dsts` from inside the namespace at ns_path; fills results (indexed like dsts).
Result<void> ping_from(const std::string& ns_path, const std::vector<Ipv4>& dsts, int timeout_ms,
                       std::vector<PairResult>& results) {
  auto ns = open_namespace(ns_path);
  if (!ns) return ns.error();
  // Only this thread moves; it ends afterwards, so it never has to come back.
  FABEMU_TRY(enter_namespace(ns->get(), CLONE_NEWNET, ns_path));
  UniqueFd sock(::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP));
  if (!sock.valid()) return errno_error("opening an ICMP socket in " + ns_path);
  const uint16_t ident = static_cast<uint16_t>(::gettid());
  std::vector<Clock::time_point> sent(dsts.size());

  for (int attempt = 0; attempt < 3; ++attempt) {
    bool pending = false;
    for (size_t i = 0; i < dsts.size(); ++i) {
      if (results[i].answered) continue;
      pending = true;
      icmphdr h{};
      h.type = ICMP_ECHO;
      h.un.echo.id = htons(ident);
      h.un.echo.sequence = htons(static_cast<uint16_t>(i));
      h.checksum = checksum(&h, sizeof h);
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_addr.s_addr = htonl(dsts[i].v);
      sent[i] = Clock::now();
      ::sendto(sock.get(), &h, sizeof h, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
    }
    if (!pending) break;
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    size_t missing = std::count_if(results.begin(), results.end(),
                                   [](const PairResult& r) { return !r.answered; });
    while (missing > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) break;
      pollfd p{sock.get(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      uint8_t buf[1500];
      ssize_t n = ::recv(sock.get(), buf, sizeof buf, 0);
      if (n < static_cast<ssize_t>(sizeof(iphdr) + sizeof(icmphdr))) continue;
      auto* ip = reinterpret_cast<iphdr*>(buf);
      auto* icmp = reinterpret_cast<icmphdr*>(buf + ip->ihl * 4);
      if (icmp->type != ICMP_ECHOREPLY || ntohs(icmp->un.echo.id) != ident) continue;
      size_t i = ntohs(icmp->un.echo.sequence);
      if (i >= dsts.size() || results[i].answered || ntohl(ip->saddr) != dsts[i].v) continue;
      results[i].answered = true;
      results[i].rtt_us = std::chrono::duration<double, std::micro>(Clock::now() - sent[i]).count();
      --missing;
    }
  }
  return ok();
}

}  // namespace

Result<ReachabilityReport> check_reachability(const LabModel& m, const LabPaths& paths,
                                              int max_peers, int timeout_ms) {
  const auto hosts = m.topo.hosts();
  const int n = static_cast<int>(hosts.size());
  ReachabilityReport report;
  std::vector<std::vector<PairResult>> per_host(n);
  std::vector<std::vector<Ipv4>> dsts(n);
  for (int i = 0; i < n; ++i) {
    // The next max_peers hosts in rank order (wrapping): covers all pairs in small labs, and
    // every leaf and pod from every host in big ones.
    int peers = std::min(n - 1, max_peers);
    int stride = std::max(1, (n - 1) / std::max(1, peers));
    for (int k = 1; k <= peers; ++k) {
      int j = (i + k * stride) % n;
      if (j == i) continue;
      per_host[i].push_back({hosts[i], hosts[j], false, 0});
      dsts[i].push_back(m.addresses.host_address(m.topo, hosts[j]));
    }
  }
  std::mutex mu;
  std::optional<Error> first_error;
  // Threads in batches: each holds a socket and a namespace reference while it runs.
  const int batch = 64;
  for (int start = 0; start < n; start += batch) {
    std::vector<std::thread> threads;
    for (int i = start; i < std::min(n, start + batch); ++i) {
      // A lab across machines: each machine pings from its own hosts, to every host.
      if (!local_node(m, hosts[i])) continue;
      threads.emplace_back([&, i] {
        auto r = ping_from(node_netns_path(m, paths, hosts[i]), dsts[i], timeout_ms, per_host[i]);
        if (!r) {
          std::lock_guard<std::mutex> lock(mu);
          if (!first_error) first_error = r.error();
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  if (first_error) return *first_error;
  for (int i = 0; i < n; ++i)
    if (local_node(m, hosts[i]))
      report.pairs.insert(report.pairs.end(), per_host[i].begin(), per_host[i].end());
  return report;
}

}  // namespace fabemu
