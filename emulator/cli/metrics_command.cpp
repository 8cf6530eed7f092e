// `metrics LAB --listen ADDR:PORT`: a Prometheus/OpenMetrics exporter of the lab's counters
// (report/openmetrics.h), served by cpp-httplib; read-only, loopback unless asked.
#include <netdb.h>
#include <netinet/in.h>

#include <httplib.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "report/openmetrics.h"
#include "session/observe.h"

namespace fabemu::cli {
namespace {

struct MetricsArgs {
  std::string lab, listen = "127.0.0.1:9464";
  bool listen_any = false, once = false, openmetrics = false;
};

struct Endpoint {
  std::string host;
  int port = 0;
};

// "127.0.0.1:9464", "[::1]:9464", "localhost:9464".
Result<Endpoint> parse_listen(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size())
    return make_error("--listen '" + text + "': give ADDRESS:PORT, e.g. 127.0.0.1:9464");
  Endpoint e{text.substr(0, colon), 0};
  if (e.host.size() > 1 && e.host.front() == '[' && e.host.back() == ']')
    e.host = e.host.substr(1, e.host.size() - 2);
  try {
    size_t used = 0;
    e.port = std::stoi(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1 || e.port < 1 || e.port > 65535)
      throw std::out_of_range("");
  } catch (const std::exception&) {
    return make_error("--listen '" + text + "': the port must be 1-65535");
  }
  if (e.host.empty())
    return make_error("--listen '" + text +
                      "': give the address too (127.0.0.1:" + std::to_string(e.port) + ")");
  return e;
}

// Whether every address `host` resolves to is a loopback address.
Result<bool> loopback_only(const std::string& host) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), "1", &hints, &res); rc != 0)
    return make_error("--listen: " + host + ": " + gai_strerror(rc));
  bool all = true;
  for (addrinfo* a = res; a; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* s = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      all &= (ntohl(s->sin_addr.s_addr) >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      const auto* s = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      all &= IN6_IS_ADDR_LOOPBACK(&s->sin6_addr) != 0;
    } else {
      all = false;
    }
  }
  freeaddrinfo(res);
  return all;
}

// Reads and renders under one lock: scrapes come on httplib's threads.
class Exporter {
 public:
  explicit Exporter(std::unique_ptr<session::LabWatch> w) : watch_(std::move(w)) {}
  std::string text(bool openmetrics) {
    std::lock_guard lock(mu_);
    const session::LabReading r = watch_->read();
    const LabModel& m = watch_->model();
    MetricsInput in{m,
                    r.sample,
                    watch_->paths().lab,
                    watch_->shaping(),
                    r.fabric_s,
                    r.read_seconds,
                    [this](size_t d) { return watch_->local(d); },
                    m.part ? m.part->machines.at(size_t(m.part->index)) : ""};
    return metrics_text(in, openmetrics);
  }
  bool lab_gone() const { return watch_->gone(); }

 private:
  std::mutex mu_;
  std::unique_ptr<session::LabWatch> watch_;
};

int cmd_metrics(const MetricsArgs& a, const LabPaths& base) {
  auto bad = [](const Error& e) {
    return report_error(session::with_failure(e, session::Failure::BadInput));
  };
  auto at = parse_listen(a.listen);
  if (!at) return bad(at.error());
  auto loop = loopback_only(at->host);
  if (!loop) return bad(loop.error());
  if (!*loop && !a.listen_any)
    return bad(make_error("--listen " + a.listen +
                          ": not a loopback address; the exporter shows the lab to anyone "
                          "who reaches it: add --listen-any to mean it"));
  if (auto r = session::need_root("metrics"); !r) return report_error(r.error());
  auto watch = session::LabWatch::open(a.lab, base);
  if (!watch) return report_error(watch.error());
  Exporter exporter(std::move(*watch));
  if (a.once) {
    std::fputs(exporter.text(a.openmetrics).c_str(), stdout);
    return kExitOk;
  }
  httplib::Server server;
  server.Get("/metrics", [&](const httplib::Request& req, httplib::Response& res) {
    if (exporter.lab_gone()) {
      res.status = 503;
      res.set_content("lab " + a.lab + " is down\n", "text/plain");
      return;
    }
    // OpenMetrics when the scraper prefers it (Prometheus asks for it first).
    const bool om =
        req.get_header_value("Accept").find("application/openmetrics-text") != std::string::npos;
    res.set_content(exporter.text(om),
                    om ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                       : "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("fabemu metrics of lab " + a.lab + ": /metrics\n", "text/plain");
  });
  // Read-only: nothing else is served.
  auto refuse = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
  };
  server.Post(".*", refuse).Put(".*", refuse).Patch(".*", refuse).Delete(".*", refuse);
  if (!server.bind_to_port(at->host, at->port))
    return report_error(errno_error("--listen " + a.listen + ": cannot listen there"));
  std::fprintf(stderr, "serving lab %s's metrics at http://%s/metrics; ^C stops\n", a.lab.c_str(),
               a.listen.c_str());
  session::InterruptGuard guard;
  std::jthread watcher([&](std::stop_token stop) {
    while (!stop.stop_requested() && !session::InterruptGuard::signal().load())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stop();
  });
  server.listen_after_bind();
  watcher.request_stop();
  return kExitOk;
}

}  // namespace

void add_metrics_command(CLI::App& app, CommandLine& cl) {
  auto a = std::make_shared<MetricsArgs>();
  auto* cmd = app.add_subcommand(
      "metrics",
      "Serve the lab's counters to Prometheus (OpenMetrics): per direction bytes, frames, drops "
      "by cause, CE marks, pause time, backlog; per host RDMA counters; the dilation factor");
  cmd->add_option("lab", a->lab, "Lab name")->required();
  cmd->add_option("--listen", a->listen, "ADDRESS:PORT to serve /metrics on")
      ->capture_default_str();
  cmd->add_flag("--listen-any", a->listen_any,
                "Allow an address other than loopback (anyone who reaches it sees the lab)");
  cmd->add_flag("--once", a->once, "Print one scrape on stdout and exit");
  cmd->add_flag("--openmetrics", a->openmetrics,
                "With --once: the OpenMetrics format (else Prometheus' text format)");
  cmd->callback([a, &cl] { cl.exit = cmd_metrics(*a, cl.base); });
}

}  // namespace fabemu::cli
