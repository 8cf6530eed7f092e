// The exposition text: each family's HELP and TYPE, then its samples, family by family.
#include "report/openmetrics.h"

#include <cinttypes>
#include <cstdio>
#include <utility>
#include <vector>

#include "model/time_scale.h"

namespace fabemu {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// A label value with \, " and newlines escaped, as both formats want.
std::string escaped(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

class Exposition {
 public:
  explicit Exposition(bool openmetrics) : om_(openmetrics) {}

  // A family; `type` "counter", "gauge" or "info". Counters' samples end in _total, an info's
  // in _info (its family name without it in OpenMetrics).
  void family(std::string name, const std::string& type, const std::string& help) {
    std::string base = name;
    if (type == "counter") base = name.substr(0, name.size() - 6);  // without _total
    if (type == "info") base = name.substr(0, name.size() - 5);     // without _info
    const std::string shown = om_ ? base : name;
    const std::string t = type == "info" && !om_ ? "gauge" : type;
    text_ += "# HELP " + shown + " " + help + "\n# TYPE " + shown + " " + t + "\n";
    sample_ = std::move(name);
  }
  void sample(const Labels& labels, double value) {
    std::string line = sample_;
    if (!labels.empty()) {
      line += '{';
      for (size_t i = 0; i < labels.size(); ++i)
        line += (i ? "," : "") + labels[i].first + "=\"" + escaped(labels[i].second) + "\"";
      line += '}';
    }
    text_ += line + " " + number(value) + "\n";
  }
  std::string finish() {
    if (om_) text_ += "# EOF\n";
    return std::move(text_);
  }

 private:
  bool om_;
  std::string text_, sample_;
};

// Each direction's labels: the link, the direction, the link's class as its tier.
struct DirectionLabels {
  const LabModel& m;
  std::string lab;
  std::string machine;
  Labels operator()(size_t d) const {
    const Topology& t = m.topo;
    const Link& l = t.links[d / 2];
    Labels out{{"lab", lab},
               {"link", link_name(t, l)},
               {"direction", direction_name(t, static_cast<int>(d / 2), d % 2)},
               {"tier", l.cls}};
    if (!machine.empty()) out.push_back({"machine", machine});
    return out;
  }
};

Labels with(Labels l, const std::string& key, const std::string& value) {
  l.push_back({key, value});
  return l;
}

void link_families(Exposition& x, const MetricsInput& in, const std::vector<size_t>& dirs) {
  const DirectionLabels labels{in.model, in.lab, in.machine};
  const auto& s = in.sample.dirs;
  auto each = [&](const char* name, const char* type, const char* help, auto value) {
    x.family(name, type, help);
    for (size_t d : dirs) value(labels(d), s[d]);
  };
  using DS = DirectionSample;
  each("fabemu_link_up", "gauge", "1 while the link model passes the direction's frames",
       [&](const Labels& l, const DS& d) { x.sample(l, d.down ? 0 : 1); });
  each("fabemu_link_speed_bytes_per_second", "gauge",
       "The direction's rate in the real fabric's bytes/s (0: unshaped, the kernel's speed)",
       [&](const Labels& l, const DS& d) { x.sample(l, double(d.rate_bps) / 8); });
  each("fabemu_link_tx_bytes_total", "counter",
       "Bytes the direction has serialized (shaped: admitted minus its queue; unshaped: the "
       "port's kernel tx)",
       [&](const Labels& l, const DS& d) { x.sample(l, double(d.bytes)); });
  each("fabemu_link_tx_frames_total", "counter",
       "Frames the direction took, by traffic class (lossless: PFC's class)",
       [&](const Labels& l, const DS& d) {
         x.sample(with(l, "class", "lossless"), double(d.lossless_packets));
         x.sample(with(l, "class", "lossy"), double(d.packets - d.lossless_packets));
       });
  each("fabemu_link_drops_total", "counter", "Frames the link model dropped, by cause",
       [&](const Labels& l, const DS& d) {
         // An unshaped port's kernel drops have no cause: they count as the queue's.
         const uint64_t queue = d.shaped ? d.drop_queue : d.drops;
         for (auto [cause, v] : {std::pair{"down", d.drop_down},
                                 {"loss", d.drop_loss},
                                 {"queue", queue},
                                 {"watchdog", d.drop_watchdog}})
           x.sample(with(l, "cause", cause), double(v));
       });
  each("fabemu_link_lossless_drops_total", "counter", "Of the drops, frames of the lossless class",
       [&](const Labels& l, const DS& d) { x.sample(l, double(d.lossless_drops)); });
  each("fabemu_link_ce_marks_total", "counter", "Frames the direction marked CE (ECN)",
       [&](const Labels& l, const DS& d) { x.sample(l, double(d.ce_marks)); });
  each("fabemu_link_pause_seconds_total", "counter",
       "Real-fabric seconds the lossless class was paused (PFC)",
       [&](const Labels& l, const DS& d) { x.sample(l, double(d.pause_ns) / 1e9); });
  each("fabemu_link_pause_events_total", "counter", "Pauses begun (PFC)",
       [&](const Labels& l, const DS& d) { x.sample(l, double(d.pause_events)); });
  each("fabemu_link_backlog_bytes", "gauge", "Bytes in the direction's queue at the read",
       [&](const Labels& l, const DS& d) { x.sample(l, double(d.queued_bytes)); });
  each("fabemu_link_queue_delay_p99_seconds", "gauge",
       "The 99th percentile of the queue delays since up (histogram bucket's bound), real "
       "seconds",
       [&](const Labels& l, const DS& d) { x.sample(l, double(d.queue_delay_p99_ns) / 1e9); });
}

void host_families(Exposition& x, const MetricsInput& in) {
  const TelemetrySample& s = in.sample;
  if (!s.buffers.empty()) {
    x.family("fabemu_switch_buffer_used_bytes", "gauge",
             "Bytes of the switch's shared buffer in use at the read");
    for (const auto& [sw, used] : s.buffers)
      x.sample({{"lab", in.lab}, {"switch", sw}}, double(used));
  }
  if (!s.rxe.empty()) {
    x.family("fabemu_host_rdma_events_total", "counter",
             "The host's rxe device's hardware counters (sent_pkts, rcvd_pkts, ...)");
    for (const auto& [host, counters] : s.rxe)
      for (const auto& [name, v] : counters)
        x.sample({{"lab", in.lab}, {"host", host}, {"counter", name}}, double(v));
  }
  if (!s.qps.empty()) {
    x.family("fabemu_host_dcqcn_rate_bytes_per_second", "gauge",
             "A QP's DCQCN rate at its sender, real bytes/s");
    for (const QpSample& q : s.qps)
      x.sample(
          {{"lab", in.lab}, {"host", q.host}, {"peer", q.peer}, {"qpn", std::to_string(q.qpn)}},
          double(q.rate_bps) / 8);
    x.family("fabemu_host_dcqcn_cnps_total", "counter", "CNPs a QP's sender took");
    for (const QpSample& q : s.qps)
      x.sample(
          {{"lab", in.lab}, {"host", q.host}, {"peer", q.peer}, {"qpn", std::to_string(q.qpn)}},
          double(q.cnps));
  }
}

}  // namespace

std::string metrics_text(const MetricsInput& in, bool openmetrics) {
  Exposition x(openmetrics);
  const Labels lab{{"lab", in.lab}};
  x.family("fabemu_lab_info", "info", "The lab: its scenario and how its link model runs");
  x.sample({{"lab", in.lab},
            {"scenario", in.model.scenario.name},
            {"shaping", in.shaping.empty() ? "unknown" : in.shaping}},
           1);
  x.family("fabemu_lab_time_dilation", "gauge",
           "Wall seconds per real-fabric second (1: not dilated); multiply a rate() by it for the "
           "real fabric's");
  x.sample(lab, in.model.time_scale.factor);
  x.family("fabemu_lab_fabric_seconds_total", "counter",
           "Real-fabric seconds since the lab's epoch (when up set its time scale)");
  x.sample(lab, in.fabric_s);
  x.family("fabemu_exporter_read_seconds", "gauge", "Wall seconds this scrape's read took");
  x.sample(lab, in.read_seconds);
  std::vector<size_t> dirs;
  for (size_t d = 0; d < in.sample.dirs.size(); ++d)
    if (!in.local || in.local(d)) dirs.push_back(d);
  link_families(x, in, dirs);
  host_families(x, in);
  return x.finish();
}

}  // namespace fabemu
