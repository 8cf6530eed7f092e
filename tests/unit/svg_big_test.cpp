// The topology picture of big fabrics: wide tiers collapsed into a picture no wider than a screen
// that names what it leaves out and keeps in sight where a run dropped frames or a fault struck;
// small fabrics still drawn node by node.
#include <gtest/gtest.h>

#include <string>

#include "fake_lab.h"
#include "report/report.h"
#include "report/svg.h"

namespace fabemu {
namespace {

using unit::load;

constexpr double kScreen = 1200;  // the widest viewBox a picture may have

const std::string kLeafSpine4096 =
    "name: ls\ntopology: {kind: leaf-spine, leaves: 256, spines: 16, hosts_per_leaf: 16}\n";
const std::string kFatTree16 = "name: ft\ntopology: {kind: fat-tree, k: 16}\n";

LabModel model(const std::string& yaml) {
  auto m = build_model(load(yaml), 0);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().what());
  return m.ok() ? std::move(*m) : LabModel{};
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// The width the picture needs before a browser scales it down.
double viewbox_width(const std::string& svg) {
  const size_t at = svg.find("viewBox=\"0 0 ");
  return at == std::string::npos ? -1 : std::stod(svg.substr(at + 13));
}

size_t elements(const std::string& svg) {
  return count(svg, "<") - count(svg, "</");
}

bool draws_node(const std::string& svg, const std::string& name) {
  return svg.find("data-node=\"" + name + "\"") != std::string::npos;
}

// The drawn link named `name` ("a:b"), or "" when it is not drawn one by one.
// A link drawn on its own (class "link", and "went-down" or "down-at-end" when a fault took it
// down).
std::string drawn_link(const std::string& svg, const std::string& name) {
  const size_t named = svg.find("\" data-link=\"" + name + "\"");
  const size_t at = named == std::string::npos ? named : svg.rfind("<g class=\"link", named);
  return at == std::string::npos ? "" : svg.substr(at, svg.find("</g>", at) - at);
}

// Two samples 1 s apart with room for every direction of the fabric.
RunReport quiet_run(const Topology& t) {
  RunReport r;
  TelemetrySample a, b;
  a.dirs.resize(2 * t.links.size());
  b.dirs.resize(2 * t.links.size());
  b.t_s = 1;
  r.samples = {a, b};
  return r;
}

void drop_on(RunReport& r, const Topology& t, const std::string& a, const std::string& b,
             uint64_t drops) {
  const std::vector<int> links = find_links(t, a, b);
  ASSERT_EQ(links.size(), 1u) << a << ":" << b;
  DirectionSample& d = r.samples.back().dirs[2 * size_t(links.front())];
  d.packets = 1000;
  d.drops = drops;
}

TEST(TopologySvg, ASmallFabricDrawsEveryNodeAndLinkAsBefore) {
  const LabModel m =
      model("name: s\ntopology: {kind: leaf-spine, leaves: 4, spines: 2, hosts_per_leaf: 2}\n");
  EXPECT_FALSE(topology_collapsed(m.topo));
  const std::string svg = topology_svg(m);
  EXPECT_EQ(count(svg, "<g class=\"node "), m.topo.nodes.size());
  EXPECT_EQ(count(svg, "<g class=\"link\""), m.topo.links.size());
  for (const Node& n : m.topo.nodes) EXPECT_TRUE(draws_node(svg, n.name)) << n.name;
  EXPECT_EQ(svg.find("class=\"group"), std::string::npos);
  EXPECT_EQ(svg.find("class=\"bundle\""), std::string::npos);
  EXPECT_EQ(svg.find("tiers collapsed"), std::string::npos);
  EXPECT_DOUBLE_EQ(viewbox_width(svg), 480);  // as before: 46 px a node, 480 at least
  EXPECT_NE(svg.find("style=\"max-width:100%;height:auto\""), std::string::npos);
}

// 24 nodes in a tier still fit the screen one by one; the 25th collapses the picture.
TEST(TopologySvg, ATierOf24IsDrawnNodeByNodeAndOf25Collapsed) {
  const LabModel fits =
      model("name: s\ntopology: {kind: leaf-spine, leaves: 24, spines: 2, hosts_per_leaf: 1}\n");
  const std::string svg = topology_svg(fits);
  EXPECT_FALSE(topology_collapsed(fits.topo));
  EXPECT_EQ(count(svg, "<g class=\"node "), fits.topo.nodes.size());
  EXPECT_LE(viewbox_width(svg), kScreen);
  const LabModel wide =
      model("name: s\ntopology: {kind: leaf-spine, leaves: 25, spines: 2, hosts_per_leaf: 1}\n");
  EXPECT_TRUE(topology_collapsed(wide.topo));
  EXPECT_NE(topology_svg(wide).find("… 16 more leaves"), std::string::npos);
}

TEST(TopologySvg, A4096HostLeafSpineFitsTheScreenAndNamesWhatItCollapses) {
  const LabModel m = model(kLeafSpine4096);
  ASSERT_EQ(m.topo.host_count(), 4096);
  EXPECT_TRUE(topology_collapsed(m.topo));
  const std::string svg = topology_svg(m);
  EXPECT_LE(viewbox_width(svg), kScreen);
  EXPECT_LT(elements(svg), 1500u);
  EXPECT_LT(svg.size(), 200'000u);
  EXPECT_NE(svg.find(">4096 hosts, 272 switches, 8192 links (tiers collapsed: 25 of 4368 nodes "
                     "shown)</text>"),
            std::string::npos)
      << svg.substr(0, 600);
  for (int i = 1; i <= 16; ++i) EXPECT_TRUE(draws_node(svg, "spine" + std::to_string(i)));
  for (const char* leaf : {"leaf1", "leaf8", "leaf256"}) EXPECT_TRUE(draws_node(svg, leaf)) << leaf;
  EXPECT_FALSE(draws_node(svg, "leaf9"));
  EXPECT_FALSE(draws_node(svg, "h1"));
  EXPECT_NE(svg.find("… 247 more leaves: leaf9 … leaf255"), std::string::npos);
  EXPECT_NE(svg.find("… 3952 more hosts"), std::string::npos);
  EXPECT_NE(svg.find("h1 … h16: 16 hosts"), std::string::npos) << "grouped under leaf1";
  EXPECT_NE(svg.find(">×247</text>"), std::string::npos) << "a spine's links to the hidden leaves";
  EXPECT_FALSE(drawn_link(svg, "leaf1:spine16").empty());
  EXPECT_EQ(count(svg, "<g class=\"link\""), 16u * 9);  // the drawn leaves' uplinks
}

TEST(TopologySvg, AK16FatTreeFitsTheScreenAndNamesWhatItCollapses) {
  const LabModel m = model(kFatTree16);
  ASSERT_EQ(m.topo.links.size(), 3072u);
  const std::string svg = topology_svg(m);
  EXPECT_LE(viewbox_width(svg), kScreen);
  EXPECT_LT(elements(svg), 1500u);
  EXPECT_LT(svg.size(), 200'000u);
  EXPECT_NE(svg.find(">1024 hosts, 320 switches, 3072 links (tiers collapsed: "),
            std::string::npos);
  for (const char* more :
       {"… 55 more cores", "… 119 more aggs", "… 119 more edges", "… 952 more hosts"})
    EXPECT_NE(svg.find(more), std::string::npos) << more;
  // The first pod in full: the generator numbers switches pod by pod.
  for (int i = 1; i <= 8; ++i) {
    EXPECT_TRUE(draws_node(svg, "edge" + std::to_string(i)));
    EXPECT_TRUE(draws_node(svg, "agg" + std::to_string(i)));
    EXPECT_FALSE(drawn_link(svg, "edge1:agg" + std::to_string(i)).empty());
  }
}

// What a run found on a hidden leaf keeps the leaf drawn (faults first, then the most drops);
// past that, the bundle it hides in turns red and says how many of its links dropped.
TEST(TopologySvg, DropsAndFaultsInACollapsedTierKeepTheirNodesInSight) {
  const LabModel m = model(kLeafSpine4096);
  RunReport r = quiet_run(m.topo);
  drop_on(r, m.topo, "leaf100", "spine3", 500);
  for (int leaf = 10; leaf < 20; ++leaf)
    drop_on(r, m.topo, "leaf" + std::to_string(leaf), "spine1", 50);
  AppliedFault f;
  f.step.kind = FaultStep::Kind::Down;
  f.step.target = "leaf200:spine1";
  f.step.what = "leaf200:spine1 down";
  f.done = true;
  r.faults.push_back(f);
  const std::string svg = topology_svg(m, &r);
  EXPECT_LE(viewbox_width(svg), kScreen);
  for (const char* leaf : {"leaf200", "leaf100", "leaf10", "leaf11"})
    EXPECT_TRUE(draws_node(svg, leaf)) << leaf;
  EXPECT_FALSE(draws_node(svg, "leaf12")) << "four kept at most";
  EXPECT_NE(drawn_link(svg, "leaf100:spine3").find("stroke=\"#d62728\""), std::string::npos);
  EXPECT_NE(drawn_link(svg, "leaf200:spine1").find("fault: leaf200:spine1 down"),
            std::string::npos);
  EXPECT_NE(svg.find("<g class=\"link down-at-end\" data-link=\"leaf200:spine1\""),
            std::string::npos)
      << "marked as down";
  EXPECT_NE(svg.find("8 dropping</text>"), std::string::npos) << "leaf12..leaf19 to spine1";
  EXPECT_NE(svg.find("8 dropped more than 1%: leaf12:spine1"), std::string::npos);
}

TEST(TopologySvg, RailOptimizedAndExplicitFabricsCollapseToo) {
  const LabModel rail =
      model("name: r\ntopology: {kind: rail-optimized, nodes: 64, gpus_per_node: 8, spines: 4}\n");
  const std::string svg = topology_svg(rail);
  EXPECT_LE(viewbox_width(svg), kScreen);
  for (int g = 1; g <= 8; ++g) EXPECT_TRUE(draws_node(svg, "leaf" + std::to_string(g)));
  EXPECT_NE(svg.find("n1-g1 … n64-g1: 64 hosts"), std::string::npos) << "a rail's GPUs";
  EXPECT_NE(svg.find("… 63 more switches"), std::string::npos) << "the scale-up switches";

  // A ring of 30 switches with a host on each: no tiers to speak of, still within the screen.
  std::string yaml = "name: e\ntopology:\n  kind: explicit\n  nodes:\n";
  for (int i = 1; i <= 30; ++i)
    yaml += "    - {name: sw" + std::to_string(i) + ", role: switch}\n    - {name: h" +
            std::to_string(i) + ", role: host}\n";
  yaml += "  links:\n";
  for (int i = 1; i <= 30; ++i)
    yaml += "    - {a: sw" + std::to_string(i) + ", b: sw" + std::to_string(i % 30 + 1) +
            "}\n    - {a: h" + std::to_string(i) + ", b: sw" + std::to_string(i) + "}\n";
  const std::string ring = topology_svg(model(yaml));
  EXPECT_LE(viewbox_width(ring), kScreen);
  EXPECT_NE(ring.find("… 21 more switches: sw9 … sw29"), std::string::npos);
  EXPECT_NE(ring.find("… 21 more hosts: h9 … h29"), std::string::npos);
  EXPECT_TRUE(draws_node(ring, "sw30"));
  EXPECT_FALSE(drawn_link(ring, "h30:sw30").empty());
}

TEST(Report, AnHtmlReportOfABigFabricStaysWithinTheWindow) {
  const LabModel m = model(kLeafSpine4096);
  const RunReport r = quiet_run(m.topo);
  const std::string html = report_html(m, r);
  EXPECT_NE(html.find("svg{max-width:100%;height:auto}"), std::string::npos);
  EXPECT_NE(html.find("too big to draw node by node"), std::string::npos);
  const size_t topology = html.find("<svg id=\"topology\"");
  ASSERT_NE(topology, std::string::npos);
  EXPECT_LE(viewbox_width(html.substr(topology)), kScreen);
  const size_t chart = html.find("<svg id=\"link-plot\"");
  ASSERT_NE(chart, std::string::npos);
  EXPECT_GT(viewbox_width(html.substr(chart)), 0) << "charts scale down too";
  EXPECT_LT(html.size(), 300'000u);
}

}  // namespace
}  // namespace fabemu
