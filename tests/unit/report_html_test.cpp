// What the run's report says beyond its plots, and how exact its sampled rates are.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "fake_lab.h"
#include "report/report.h"
#include "report/svg.h"
#include "runtime/faults.h"
#include "runtime/telemetry.h"
#include "util/units.h"

namespace fabemu {
namespace {

using unit::load;
using unit::model_of;

const std::string kLab = R"(name: r
seed: 3
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
links: {default: {rate: 25mbit, delay: 5us}}
workload:
  - {collective: allreduce, sizes: [64K, 1M]}
faults:
  - {at: 1s, link: "leaf1:spine1", flap: {count: 2, down: 200ms, up: 300ms}}
  - {at: 2s, link: "leaf2:spine1", down: true}
)";

// Two samples a second apart of every direction, all shaped; `bytes` on each.
RunReport two_samples(const LabModel& m, uint64_t bytes) {
  RunReport r;
  r.reachable = r.pairs = 12;
  TelemetrySample a, b;
  a.dirs.resize(2 * m.topo.links.size());
  b.dirs.resize(a.dirs.size());
  for (size_t d = 0; d < a.dirs.size(); ++d) {
    a.dirs[d].shaped = b.dirs[d].shaped = true;
    b.dirs[d].bytes = bytes;
    b.dirs[d].packets = bytes / 1000;
  }
  b.t_s = b.wall_s = 1;
  r.samples = {a, b};
  return r;
}

PlanOptions htb_mode() {
  PlanOptions o;
  o.fq = false;
  o.htb = true;
  o.no_fq_reason = "sch_fq: ENOENT";
  return o;
}

TEST(ReportHtml, AnHtbLabSaysNoDelayOrJitterWasAdded) {
  const LabModel m = model_of(kLab);
  RunReport r = two_samples(m, 1000);
  r.link_mode = htb_mode();
  const std::string html = report_html(m, r);
  const size_t note = html.find("<p id=\"link-model\"");
  ASSERT_NE(note, std::string::npos);
  const std::string p = html.substr(note, html.find("</p>", note) - note);
  EXPECT_NE(p.find("No delay or jitter added."), std::string::npos) << p;
  // `up`'s sentence, and what the scenario asked for.
  EXPECT_NE(p.find("link model on 16 ports: this kernel has no fq (sch_fq: ENOENT), so htb holds"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("delay up to 5us on 16 of 16 link directions"), std::string::npos) << p;
  const std::string jsonl = report_json_lines(m, r);
  const std::string run = jsonl.substr(0, jsonl.find('\n'));
  EXPECT_NE(run.find("\"link_model\":{\"mode\":\"htb\",\"reason\":\"sch_fq: ENOENT\","
                     "\"delay_added\":false"),
            std::string::npos)
      << run;

  r.link_mode = PlanOptions{};  // fq: everything added, nothing to say
  EXPECT_EQ(report_html(m, r).find("id=\"link-model\""), std::string::npos);
  EXPECT_NE(report_json_lines(m, r).find("\"delay_added\":true"), std::string::npos);
}

// The rows of the table with id `id`, each as its cells' text.
std::vector<std::vector<std::string>> table_rows(const std::string& html, const std::string& id) {
  std::vector<std::vector<std::string>> rows;
  const size_t at = html.find("<table id=\"" + id + "\"");
  if (at == std::string::npos) return rows;
  const std::string table = html.substr(at, html.find("</table>", at) - at);
  static const std::regex row("<tr>(.*?)</tr>"), cell("<td[^>]*>(.*?)</td>");
  for (auto r = std::sregex_iterator(table.begin(), table.end(), row); r != std::sregex_iterator();
       ++r) {
    const std::string inner = (*r)[1];
    std::vector<std::string> cells;
    for (auto c = std::sregex_iterator(inner.begin(), inner.end(), cell);
         c != std::sregex_iterator(); ++c)
      cells.push_back((*c)[1]);
    if (!cells.empty()) rows.push_back(cells);
  }
  return rows;
}

TEST(ReportHtml, DcqcnQpRatesAndSharedBuffersArePlottedAndInTheSamples) {
  const LabModel m = model_of(kLab);
  RunReport r = two_samples(m, 1000);
  EXPECT_EQ(report_html(m, r).find("id=\"qp-plot\""), std::string::npos);  // nothing to plot
  r.samples[0].qps = {{"h2", "10.0.0.1", 17, 25'000'000'000, 0}};
  r.samples[1].qps = {{"h2", "10.0.0.1", 17, 12'500'000'000, 3}};
  r.samples[0].buffers = {{"leaf1", 0}};
  r.samples[1].buffers = {{"leaf1", 300'000}};
  const std::string html = report_html(m, r);
  EXPECT_NE(html.find("id=\"qp-plot\""), std::string::npos);
  EXPECT_NE(html.find("h2 -&gt; 10.0.0.1 QP 17"), std::string::npos);
  EXPECT_NE(html.find("id=\"buffer-plot\""), std::string::npos);
  const std::string jsonl = report_json_lines(m, r);
  EXPECT_NE(jsonl.find("\"qps\":[{\"host\":\"h2\",\"peer\":\"10.0.0.1\",\"qpn\":17,"
                       "\"rate_bps\":12500000000,\"cnps\":3}]"),
            std::string::npos)
      << jsonl;
  EXPECT_NE(jsonl.find("\"buffers\":{\"leaf1\":300000}"), std::string::npos);
}

TEST(ReportHtml, EveryDirectionIsInTheLinkTableDroppingFirstThenBusiest) {
  const LabModel m = model_of(kLab);
  RunReport r = two_samples(m, 1000);
  r.samples[1].dirs[5].bytes = 2'500'000;  // 20 Mbit/s for the second: the busiest
  DirectionSample& dropping = r.samples[1].dirs[2];
  dropping.drop_queue = 12;
  dropping.drop_down = 3;
  dropping.drops = 15;
  dropping.ce_marks = 4;
  dropping.queue_delay_p99_ns = 2'000'000;
  const auto rows = table_rows(report_html(m, r), "links");
  ASSERT_EQ(rows.size(), 16u);
  EXPECT_EQ(rows[0][0], xml_escape(direction_name(m.topo, 1, false)));
  EXPECT_EQ(rows[0][4], "15");
  EXPECT_EQ(rows[0][5], "queue 12, down 3");
  EXPECT_EQ(rows[0][6], "4");
  EXPECT_EQ(rows[0][7], "&lt;2ms");
  EXPECT_EQ(rows[1][0], xml_escape(direction_name(m.topo, 2, true)));
  EXPECT_EQ(rows[1][1], "2.50");   // MB
  EXPECT_EQ(rows[1][3], "80.0%");  // of its 25 Mbit/s
  // The terminal ranks the same way (print_links uses rank_directions).
  const auto ranked = rank_directions(m, r);
  EXPECT_EQ(ranked[0].dir, 2u);
  EXPECT_EQ(ranked[1].dir, 5u);

  // A big lab: the first 32 rows and a note saying so.
  const LabModel big = model_of(R"(name: b
topology: {kind: leaf-spine, leaves: 4, spines: 2, hosts_per_leaf: 8}
links: {default: {rate: 25mbit}}
)");
  const std::string html = report_html(big, two_samples(big, 1000));
  EXPECT_EQ(table_rows(html, "links").size(), 32u);
  EXPECT_NE(html.find("The first 32 of 80 directions"), std::string::npos);
}

TEST(ReportHtml, PerRankTimesShowTheSpreadAndTheSlowestRanksHost) {
  const LabModel m = model_of(kLab);
  RunReport r = two_samples(m, 1000);
  StepReport s;
  s.title = "workload[0] allreduce (gloo, tcp)";
  s.ok = true;
  s.collective = "allreduce";
  SizeResult x;
  x.size = 1 << 20;
  x.rank_time_us = {10, 12, 30, 11};
  x.time_us = 30;  // the slowest rank's, as fabemu-collective reports it
  s.results = {x};
  r.steps.push_back(s);
  const auto spread = rank_spread(m.topo, x);
  ASSERT_TRUE(spread);
  EXPECT_EQ(spread->slowest_rank, 2);
  EXPECT_DOUBLE_EQ(spread->median_us, 11.5);
  int host_of_rank2 = -1;
  for (int h : m.topo.hosts())
    if (m.topo.nodes[h].rank == 2) host_of_rank2 = h;
  ASSERT_GE(host_of_rank2, 0);
  const auto rows = table_rows(report_html(m, r), "ranks");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"[0] allreduce", "1M", "4", "10us", "11.5us", "30us",
                                      "+200.0%", m.topo.nodes[host_of_rank2].name + " (rank 2)"}));
}

TEST(ReportHtml, LinksTheFaultsTookDownAreMarkedWithALegend) {
  const LabModel m = model_of(kLab);
  RunReport r = two_samples(m, 1000);
  r.faults = fault_log(m, expand_faults(m.scenario));
  for (AppliedFault& f : r.faults) f.done = true;  // both flaps and the down played
  // And h1's NIC taken down and up again.
  const int h1 = m.topo.find("h1");
  const int nic_link = m.topo.links_of(h1).front();
  for (bool up : {false, true}) {
    AppliedFault f;
    f.step.kind = up ? FaultStep::Kind::NicUp : FaultStep::Kind::NicDown;
    f.step.target = "h1";
    f.step.nic = m.topo.links[nic_link].end(h1).ifname;
    f.done = true;
    r.faults.push_back(f);
  }
  const LinkDowns downs = link_downs(m.topo, r.faults);
  const auto link = [&](const char* a, const char* b) { return find_links(m.topo, a, b).front(); };
  EXPECT_EQ(downs.times_down[link("leaf1", "spine1")], 2);
  EXPECT_FALSE(downs.down_at_end[link("leaf1", "spine1")]);
  EXPECT_EQ(downs.times_down[link("leaf2", "spine1")], 1);
  EXPECT_TRUE(downs.down_at_end[link("leaf2", "spine1")]);
  EXPECT_EQ(downs.times_down[nic_link], 1);
  EXPECT_FALSE(downs.down_at_end[nic_link]);
  EXPECT_EQ(downs.times_down[link("leaf2", "spine2")], 0);

  const std::string svg = topology_svg(m, &r);
  EXPECT_NE(svg.find("<g class=\"link went-down\" data-link=\"leaf1:spine1\""), std::string::npos);
  EXPECT_NE(svg.find("<g class=\"link down-at-end\" data-link=\"leaf2:spine1\""),
            std::string::npos);
  EXPECT_NE(svg.find("<g class=\"link\" data-link=\"leaf2:spine2\""), std::string::npos);
  const size_t legend = svg.find("<g class=\"legend\"");
  ASSERT_NE(legend, std::string::npos);
  EXPECT_NE(svg.find("taken down by a fault, up again", legend), std::string::npos);
  EXPECT_NE(svg.find("down at the end", legend), std::string::npos);
  // Unplayed steps take nothing down.
  for (AppliedFault& f : r.faults) f.done = false;
  EXPECT_FALSE(link_downs(m.topo, r.faults).any());
}

// The x labels of a chart: (x, text) of the labels under its axis.
std::vector<std::pair<double, std::string>> x_labels(const std::string& html,
                                                     const std::string& id) {
  const size_t at = html.find("<svg id=\"" + id + "\"");
  const std::string svg = html.substr(at, html.find("</svg>", at) - at);
  static const std::regex label(
      "<text x=\"([0-9.]+)\" y=\"271.0\" font-size=\"10\" text-anchor=\"middle\">([^<]*)</text>");
  std::vector<std::pair<double, std::string>> out;
  for (auto i = std::sregex_iterator(svg.begin(), svg.end(), label); i != std::sregex_iterator();
       ++i)
    out.push_back({std::stod((*i)[1]), (*i)[2]});
  return out;
}

TEST(ReportHtml, TheBusbwAxisIsLabelledWithSizesThatDoNotOverlap) {
  const LabModel m = model_of(kLab);
  for (auto [from, to] : std::initializer_list<std::pair<int, int>>{{16, 20}, {10, 30}}) {
    RunReport r = two_samples(m, 0);
    StepReport s;
    s.collective = "allreduce";
    for (int e = from; e <= to; ++e) {
      SizeResult x;
      x.size = uint64_t{1} << e;
      x.busbw_gbps = 0.001 * e;
      s.results.push_back(x);
    }
    r.steps.push_back(s);
    const auto labels = x_labels(report_html(m, r), "busbw-plot");
    ASSERT_GE(labels.size(), 5u) << from << ".." << to;
    EXPECT_EQ(labels.front().second, format_size(uint64_t{1} << from));
    for (size_t i = 0; i < labels.size(); ++i) {
      const std::string& text = labels[i].second;
      bool power = false;
      for (int e = from; e <= to; ++e) power |= text == format_size(uint64_t{1} << e);
      EXPECT_TRUE(power) << text;
      if (i == 0) continue;
      // About 6 px a character at 10 px: the labels' half widths and a gap fit between them.
      const double gap = labels[i].first - labels[i - 1].first;
      EXPECT_GE(gap, 3.0 * double(text.size() + labels[i - 1].second.size()) + 4)
          << labels[i - 1].second << " " << text;
    }
  }
  // The default scenario's two sizes: every power of two between them.
  RunReport r = two_samples(m, 0);
  StepReport s;
  s.collective = "allreduce";
  s.results = {{65536, 10, 0.001, 10, -1, -1, 0, {}}, {1 << 20, 100, 0.002, 100, -1, -1, 0, {}}};
  r.steps.push_back(s);
  std::vector<std::string> texts;
  for (const auto& [x, text] : x_labels(report_html(m, r), "busbw-plot")) texts.push_back(text);
  EXPECT_EQ(texts, (std::vector<std::string>{"64K", "128K", "256K", "512K", "1M"}));
}

// A link model's direction, simulated: frames admitted in bursts into a virtual queue drained at
// `wall_bps`, read now and then (a read may miss the last frame admitted, as one another CPU
// is still counting), the reads turned into samples by the sampler's own conversion.
struct SimulatedLink {
  uint64_t wall_bps;
  uint64_t admitted = 0, busy_until_ns = 0;
  void admit(uint64_t now_ns, uint64_t bytes) {
    busy_until_ns = std::max(busy_until_ns, now_ns) + bytes * 8'000'000'000ULL / wall_bps;
    admitted += bytes;
  }
  PortSnapshot read(uint64_t now_ns, uint64_t missed) const {
    PortSnapshot p;
    p.cfg.rate_bps = wall_bps;
    p.counters.bytes = admitted - missed;
    p.counters.packets = p.counters.bytes / 1514;
    p.busy_until_ns = busy_until_ns;
    p.read_ns = now_ns;
    return p;
  }
};

// `scale` x dilated, the link `real_bps`; every 250 ms of wall clock (+-40 ms) a read, a burst
// of frames each 100 ms that fills a deep queue, and a final read 1 ms after the one before.
RunReport simulated_run(const LabModel& m, double scale, uint64_t real_bps, bool admitted_only) {
  const TimeScale ts{scale};
  SimulatedLink link{ts.wall_bps(real_bps)};
  RunReport r;
  r.sample_slack_bytes = 2 * 1514;  // two CPUs
  uint64_t state = 7;
  auto rnd = [&](uint64_t n) { return ((state = state * 6364136223846793005ULL + 1) >> 33) % n; };
  std::vector<uint64_t> reads;
  for (uint64_t t = 0; t < 20'000'000'000ULL; t += 250'000'000)
    reads.push_back(t + rnd(80) * 1'000'000);
  reads.push_back(reads.back() + 1'000'000);
  uint64_t next_burst = 0;
  for (uint64_t read : reads) {
    for (; next_burst <= read; next_burst += 100'000'000) {
      // Enough for the link's 100 ms and more, in one go: the queue takes it.
      const uint64_t frames = link.wall_bps / 8 / 10 / 1514 + 1 + rnd(40);
      for (uint64_t f = 0; f < frames; ++f) link.admit(next_burst + f * 1000, 1514);
    }
    const uint64_t missed = rnd(3) == 0 ? 1514 : 0;  // a frame still being counted elsewhere
    DirectionSample d = shaped_sample(link.read(read, missed), ts);
    if (admitted_only) d.bytes += d.queued_bytes;  // the counters as they were read before
    d.t_s = ts.real_s(double(read) / 1e9);
    TelemetrySample s;
    // The round's stamp: the sampler's own, up to 30 ms of wall clock before this direction's
    // read (many maps, a busy machine).
    s.wall_s = double(read) / 1e9 - double(rnd(30)) / 1e3;
    s.t_s = ts.real_s(s.wall_s);
    if (admitted_only) d.t_s = s.t_s;
    s.dirs.assign(2 * m.topo.links.size(), DirectionSample{});
    s.dirs[0] = d;
    r.samples.push_back(s);
  }
  return r;
}

TEST(ReportRates, SampledRatesNeverExceedTheLineRateByMoreThanTheStatedBound) {
  for (auto [scale, gbit] :
       std::initializer_list<std::pair<double, double>>{{1, 0.025}, {4000, 400}, {1000, 100}}) {
    const uint64_t line = static_cast<uint64_t>(gbit * 1e9);
    const LabModel m = model_of(
        "name: s\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, "
        "hosts_per_leaf: 1}\nlinks: {default: {rate: " +
        format_rate(line) + "}}\n");
    const RunReport r = simulated_run(m, scale, line, false);
    const SamplerBound bound = sampler_bound(m, r);
    EXPECT_EQ(bound.slowest_line_bps, line);
    EXPECT_GT(bound.bps, 0);
    EXPECT_LT(bound.share(), 0.01) << "two frames over ~250 ms of wall clock";
    double peak = 0;
    for (const PlottedInterval& i : plotted_intervals(r, 0)) {
      const double bps = double(i.growth.bytes) * 8 / i.dt_s;
      peak = std::max(peak, bps);
      EXPECT_LE(bps, double(line) + bound.bps) << "x" << scale << " at " << i.t_s << " s";
    }
    EXPECT_GT(peak, 0.95 * double(line)) << "the link is saturated";
    // The page says so.
    const std::string html = report_html(m, r);
    EXPECT_NE(html.find("<p id=\"sampler-note\""), std::string::npos);
    EXPECT_NE(html.find("% of the slowest link's " + format_rate_short(double(line))),
              std::string::npos);

    // The same reads counted when admitted, over the round's stamp: far above the line rate.
    const RunReport before = simulated_run(m, scale, line, true);
    double worst = 0;
    for (size_t k = 1; k < before.samples.size(); ++k) {
      const auto &a = before.samples[k - 1], &b = before.samples[k];
      worst = std::max(worst, double(b.dirs[0].bytes - a.dirs[0].bytes) * 8 / (b.t_s - a.t_s));
    }
    EXPECT_GT(worst, 1.2 * double(line)) << "x" << scale;
  }
}

}  // namespace
}  // namespace fabemu
