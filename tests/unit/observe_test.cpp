// What `capture`, `metrics`, `top` and `run --junit` make of a lab, without one: capture files
// read back block by block, targets resolved on a model, the real fabric's timestamps, the
// exposition text, top's frame, and JUnit XML parsed by libxml2.
#include <gtest/gtest.h>
#include <libxml/parser.h>

#include <cstring>

#include "fake_lab.h"
#include "report/junit.h"
#include "report/openmetrics.h"
#include "report/pcapng.h"
#include "report/top_view.h"
#include "session/observe.h"
#include "session/session.h"

namespace fabemu {
namespace {

using unit::load;
using unit::model_of;

const std::string kLeaf = R"(name: o
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2}
links: {default: {rate: 100gbit}}
time_scale: 1000
)";

template <typename T>
T at(const std::vector<uint8_t>& b, size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

// Blocks as (type, offset, length), checking that each ends with its length again.
std::vector<std::tuple<uint32_t, size_t, uint32_t>> blocks(const std::vector<uint8_t>& b) {
  std::vector<std::tuple<uint32_t, size_t, uint32_t>> out;
  for (size_t off = 0; off + 12 <= b.size();) {
    const uint32_t type = at<uint32_t>(b, off), len = at<uint32_t>(b, off + 4);
    EXPECT_EQ(len % 4, 0u);
    EXPECT_EQ(at<uint32_t>(b, off + len - 4), len);
    out.emplace_back(type, off, len);
    off += len;
  }
  return out;
}

TEST(Pcapng, ASectionInterfacesAndAFrameReadBackBlockByBlock) {
  std::vector<uint8_t> b;
  PcapngWriter::section(b, "fabemu", "real time");
  PcapngWriter::interface(b, {"h1:leaf1", "h1>leaf1 (sent by h1's port eth0)", "udp", 128});
  PcapngWriter::interface(b, {"h1:leaf1", "leaf1>h1", "", 128});
  const std::vector<uint8_t> frame(61, 0xab);  // not a multiple of 4: padded
  const uint64_t ts = 1796651488564598218ull;
  PcapngWriter::packet(b, 1, ts, frame, 1514, FrameDirection::Inbound);
  const auto bl = blocks(b);
  ASSERT_EQ(bl.size(), 4u);
  EXPECT_EQ(std::get<0>(bl[0]), 0x0A0D0D0Au);
  EXPECT_EQ(at<uint32_t>(b, 8), 0x1A2B3C4Du);
  EXPECT_EQ(std::get<0>(bl[1]), 1u);
  EXPECT_EQ(at<uint16_t>(b, std::get<1>(bl[1]) + 8), 1);  // Ethernet
  EXPECT_EQ(at<uint32_t>(b, std::get<1>(bl[1]) + 12), 128u);
  // if_name is the interface block's first option.
  const size_t opt = std::get<1>(bl[1]) + 16;
  EXPECT_EQ(at<uint16_t>(b, opt), 2);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&b[opt + 4]), at<uint16_t>(b, opt + 2)),
            "h1:leaf1");
  const size_t epb = std::get<1>(bl[3]);
  EXPECT_EQ(std::get<0>(bl[3]), 6u);
  EXPECT_EQ(at<uint32_t>(b, epb + 8), 1u);  // the interface
  EXPECT_EQ((uint64_t(at<uint32_t>(b, epb + 12)) << 32) | at<uint32_t>(b, epb + 16), ts);
  EXPECT_EQ(at<uint32_t>(b, epb + 20), 61u);
  EXPECT_EQ(at<uint32_t>(b, epb + 24), 1514u);
  EXPECT_EQ(b[epb + 28 + 60], 0xab);
  const size_t flags = epb + 28 + 64;  // the data padded to 64
  EXPECT_EQ(at<uint16_t>(b, flags), 2);
  EXPECT_EQ(at<uint32_t>(b, flags + 4), 1u);  // inbound
}

TEST(Pcap, TheHeaderSaysNanosecondsAndARecordItsLengths) {
  std::vector<uint8_t> b;
  PcapWriter::header(b, 65535);
  PcapWriter::record(b, 5'000'000'123ull, std::vector<uint8_t>(10, 1), 60);
  ASSERT_EQ(b.size(), 24u + 16 + 10);
  EXPECT_EQ(at<uint32_t>(b, 0), 0xa1b23c4du);
  EXPECT_EQ(at<uint32_t>(b, 20), 1u);
  EXPECT_EQ(at<uint32_t>(b, 24), 5u);
  EXPECT_EQ(at<uint32_t>(b, 28), 123u);
  EXPECT_EQ(at<uint32_t>(b, 32), 10u);
  EXPECT_EQ(at<uint32_t>(b, 36), 60u);
}

TEST(CaptureTarget, ALinkADirectionAndAPortResolveToTheFirstNodesPort) {
  const LabModel m = model_of(kLeaf);
  auto link = session::resolve_capture_target(m, "h1:leaf1");
  ASSERT_TRUE(link.ok()) << link.error().what();
  EXPECT_EQ(m.topo.nodes[link->node].name, "h1");
  EXPECT_EQ(link->ifname, "eth0");
  ASSERT_EQ(link->interfaces.size(), 2u);
  EXPECT_EQ(link->interfaces[0].name, "h1:leaf1");
  EXPECT_EQ(link->interfaces[0].description.rfind("h1>leaf1", 0), 0u);
  EXPECT_EQ(link->interfaces[1].description.rfind("leaf1>h1", 0), 0u);
  auto reverse = session::resolve_capture_target(m, "leaf1:h1");  // leaf1's port named h1
  ASSERT_TRUE(reverse.ok());
  EXPECT_EQ(m.topo.nodes[reverse->node].name, "leaf1");
  EXPECT_EQ(reverse->interfaces[0].description.rfind("leaf1>h1", 0), 0u);
  auto one = session::resolve_capture_target(m, "spine1>leaf2");
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->out_only);
  EXPECT_EQ(one->interfaces.size(), 1u);
  EXPECT_EQ(m.topo.nodes[one->node].name, "spine1");
  for (const char* bad : {"h1", "h1:", ":h1", "h9:leaf1", "h1:h2", "h1>spine1"}) {
    auto r = session::resolve_capture_target(m, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(session::failure_of(r.error()), session::Failure::BadInput) << bad;
    EXPECT_NE(r.error().what().find(bad), std::string::npos) << r.error().what();
  }
}

TEST(FabricClock, WallTimeSinceTheEpochIsDividedByTheScale) {
  const session::FabricClock c{1'000'000'000'000, 1000, false};
  EXPECT_EQ(c.stamp(1'000'000'000'000), 1'000'000'000'000u);
  EXPECT_EQ(c.stamp(1'000'000'121'000), 1'000'000'000'121u);  // 121 us of wall: 121 ns
  const session::FabricClock wall{1'000'000'000'000, 1000, true};
  EXPECT_EQ(wall.stamp(1'000'000'121'000), 1'000'000'121'000u);
}

TelemetrySample sample_of(const LabModel& m, uint64_t h1_bytes, double t_s) {
  TelemetrySample s;
  s.t_s = t_s;
  s.dirs.resize(2 * m.topo.links.size());
  for (DirectionSample& d : s.dirs) {
    d.shaped = true;
    d.rate_bps = 100'000'000'000;
    d.t_s = t_s;
  }
  s.dirs[0].bytes = h1_bytes;  // h1>leaf1
  s.dirs[0].packets = 10;
  s.dirs[0].lossless_packets = 4;
  s.dirs[0].drop_queue = 3;
  s.dirs[0].drops = 3;
  s.dirs[1].down = true;
  s.rxe["h1"] = {{"sent_pkts", 7}};
  return s;
}

TEST(Metrics, TheTextFormatHasEveryFamilyWithItsLabels) {
  const LabModel m = model_of(kLeaf);
  const TelemetrySample s = sample_of(m, 5000, 1);
  const std::string text =
      metrics_text({m, s, "lab\"x", "htb", 2.5, 0.01, nullptr, ""}, /*openmetrics=*/false);
  EXPECT_NE(text.find("# TYPE fabemu_link_tx_bytes_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("fabemu_link_tx_bytes_total{lab=\"lab\\\"x\",link=\"h1:leaf1\","
                      "direction=\"h1>leaf1\",tier=\"host-leaf\"} 5000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("direction=\"h1>leaf1\",tier=\"host-leaf\",class=\"lossless\"} 4\n"),
            std::string::npos);
  EXPECT_NE(text.find("direction=\"h1>leaf1\",tier=\"host-leaf\",class=\"lossy\"} 6\n"),
            std::string::npos);
  EXPECT_NE(text.find("direction=\"h1>leaf1\",tier=\"host-leaf\",cause=\"queue\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("fabemu_link_up{lab=\"lab\\\"x\",link=\"h1:leaf1\",direction=\"leaf1>h1\","
                      "tier=\"host-leaf\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("fabemu_link_speed_bytes_per_second{"), std::string::npos);
  EXPECT_NE(text.find("} 12500000000\n"), std::string::npos);  // 100 Gbit/s
  EXPECT_NE(text.find("fabemu_lab_time_dilation{lab=\"lab\\\"x\"} 1000\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE fabemu_lab_info gauge\n"), std::string::npos);
  EXPECT_NE(text.find("fabemu_host_rdma_events_total{lab=\"lab\\\"x\",host=\"h1\","
                      "counter=\"sent_pkts\"} 7\n"),
            std::string::npos);
  EXPECT_EQ(text.find("# EOF"), std::string::npos);
}

TEST(Metrics, OpenMetricsNamesCounterFamiliesWithoutTotalAndEnds) {
  const LabModel m = model_of(kLeaf);
  const TelemetrySample s = sample_of(m, 5000, 1);
  // Only the directions this machine reports.
  const std::string text = metrics_text(
      {m, s, "o", "fq", 1, 0, [](size_t d) { return d == 0; }, "machine1"}, /*openmetrics=*/true);
  EXPECT_NE(text.find("# TYPE fabemu_link_tx_bytes counter\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE fabemu_lab info\nfabemu_lab_info{"), std::string::npos);
  EXPECT_NE(text.find(",machine=\"machine1\"} 5000\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("direction=\"leaf1>h1\""), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
}

TEST(Top, TheBusiestDirectionComesFirstInTheRealFabricsUnits) {
  const LabModel m = model_of(kLeaf);
  // 1.25 GB in 0.1 s of the real fabric: 100 Gbit/s, the link's rate.
  const TelemetrySample before = sample_of(m, 0, 1), now = sample_of(m, 1'250'000'000, 1.1);
  const std::vector<bool> local(now.dirs.size(), true);
  const auto lines = top_frame(
      {m, before, now, "o", "htb", "workload[0] of 1: allreduce", "", 12.5, 0.003, local}, 3, 200);
  ASSERT_EQ(lines.size(), 5u + 3);
  EXPECT_NE(lines[0].find("lab o"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("x1000 dilated"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "step: workload[0] of 1: allreduce");
  EXPECT_NE(lines[2].find("links down: 1: h1:leaf1"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[4].rfind("DIRECTION", 0), 0u);
  EXPECT_EQ(lines[5].rfind("h1>leaf1", 0), 0u) << lines[5];
  EXPECT_NE(lines[5].find("100 Gbit/s"), std::string::npos) << lines[5];
  EXPECT_NE(lines[5].find("100%"), std::string::npos) << lines[5];
  EXPECT_LE(top_frame({m, before, now, "o", "", "", "", 0, 0, local}, 3, 20)[0].size(), 20u);
}

TEST(Junit, PassingAndFailingCasesAreWellFormedAndCounted) {
  RunReport r;
  r.lab = "j<&>";
  r.scenario_file = "s.yaml";
  r.reachable = 2;
  r.pairs = 2;
  StepReport ok;
  ok.title = "workload[0] allreduce (gloo, tcp)";
  ok.ok = true;
  ok.results.push_back(SizeResult{65536, 10, 1.5});
  StepReport bad;
  bad.title = "workload[1] exec false";
  bad.failure = "h1: exit 1 \"quoted\" <tag>";
  r.steps = {ok, bad};
  r.expectations = {{"completes: true", false}};
  JunitRun run{r, "2026-12-07T14:00:00", 3.25, 1000};
  run.down_error = "down failed";
  const std::string xml = junit_xml({run});
  xmlDocPtr doc = xmlReadMemory(xml.data(), int(xml.size()), "junit.xml", nullptr, 0);
  ASSERT_NE(doc, nullptr) << xml;
  xmlFreeDoc(doc);
  EXPECT_NE(xml.find("<testsuites name=\"fabemu run\" tests=\"5\" failures=\"2\" errors=\"1\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("name=\"fabemu run j&lt;&amp;&gt;\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("message=\"h1: exit 1 &quot;quoted&quot; &lt;tag&gt;\""), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("size 64K: busbw 1.5"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<error message=\"down failed\""), std::string::npos) << xml;
}

}  // namespace
}  // namespace fabemu
