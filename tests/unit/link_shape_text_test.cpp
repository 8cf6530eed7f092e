// One set of rules for link shapes: a scenario file and `link set` accept and refuse the same.
#include "scenario/link_shape_text.h"

#include <gtest/gtest.h>

#include "fake_lab.h"

namespace fabemu {
namespace {

// The verdict of the scenario file on `key: text` under links.default.
bool yaml_accepts(const std::string& key, const std::string& text) {
  auto s = load_scenario_string(
      "name: x\ntopology: {kind: leaf-spine, leaves: 1, spines: 1, "
      "hosts_per_leaf: 1}\nlinks: {default: {" +
          key + ": \"" + text + "\"}}\n",
      "t.yaml");
  return s.ok();
}

bool change_accepts(const std::string& key, const std::string& text) {
  LinkShape s;
  return set_link_shape_field(s, key, text, 1500, ShapeSyntax::Change).ok();
}

TEST(LinkShapeText, ScenarioFilesAndLiveChangesAgreeOnEveryValue) {
  const std::pair<const char*, const char*> cases[] = {
      {"rate", "25gbit"},      {"rate", "fast"},          {"rate", "1.5gbit"},
      {"delay", "2us"},        {"delay", "20"},           {"jitter", "1ms"},
      {"loss", "0.5%"},        {"loss", "150%"},          {"queue", "200us"},
      {"queue", "64K"},        {"queue", "100"},          {"queue", "0s"},
      {"queue", "9000"},       {"ecn_threshold", "40us"}, {"loss_burst", "1%,25%"},
      {"loss_burst", "1%,0%"}, {"loss_burst", "1%"}};
  for (const auto& [key, text] : cases) {
    if (std::string(key) == "loss_burst") continue;  // a mapping in YAML, checked below
    EXPECT_EQ(yaml_accepts(key, text), change_accepts(key, text)) << key << ": " << text;
  }
  EXPECT_FALSE(change_accepts("queue", "100"));  // the inconsistency this module removed
  EXPECT_TRUE(change_accepts("loss_burst", "1%,25%"));
  EXPECT_FALSE(change_accepts("loss_burst", "1%,0%"));  // r = 0: as the YAML mapping refuses
  EXPECT_FALSE(change_accepts("loss_burst", "1%"));
}

TEST(LinkShapeText, RedEcnIsAProfileFromKminToKmax) {
  LinkShape s;
  ASSERT_TRUE(set_link_shape_field(s, "ecn", "400K,1600K,20%", 1500, ShapeSyntax::Change));
  ASSERT_TRUE(s.ecn);
  EXPECT_EQ(*s.ecn, (RedEcn{400 * 1024, 1600 * 1024, 0.2}));
  EXPECT_EQ(s.str(), "ecn {kmin 400K, kmax 1600K, pmax 20%}");
  ASSERT_TRUE(set_link_shape_field(s, "ecn", "off", 1500, ShapeSyntax::Change));
  EXPECT_EQ(s.str(), "ecn off");
  EXPECT_FALSE(change_accepts("ecn", "1600K,400K,20%"));  // kmax below kmin
  EXPECT_FALSE(change_accepts("ecn", "400K,1600K,0%"));
  EXPECT_FALSE(change_accepts("ecn", "400K,1600K,120%"));
  EXPECT_FALSE(change_accepts("ecn", "400K,1600K"));
  auto r = load_scenario_string(
      "name: x\ntopology: {kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 1}\n"
      "links: {default: {ecn: {kmin: 0, kmax: 100K, pmax: 100%}}}\n",
      "t.yaml");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->links.defaults.ecn, (RedEcn{0, 100 * 1024, 1.0}));
}

TEST(LinkShapeText, PfcXoffDynamicFollowsTheSharedBufferWithAnXonOffset) {
  LinkShape s;
  ASSERT_TRUE(set_link_shape_field(s, "pfc", "dynamic,18K,1ms", 9000, ShapeSyntax::Change));
  ASSERT_TRUE(s.pfc);
  EXPECT_TRUE(s.pfc->dynamic());
  EXPECT_EQ(*s.pfc, (PfcShape{kPfcXoffDynamic, 18 * 1024, 1'000'000}));
  EXPECT_EQ(s.str(), "pfc {xoff dynamic, xon_offset 18K, watchdog 1ms}");
  ASSERT_TRUE(set_link_shape_field(s, "pfc", "dynamic", 9000, ShapeSyntax::Change));
  EXPECT_EQ(s.pfc->xon_bytes, 18000u);                 // two frames of the MTU
  EXPECT_FALSE(change_accepts("pfc", "dynamic,100"));  // below one frame
  auto r = load_scenario_string(
      "name: x\ntopology: {kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 1}\n"
      "links: {default: {rate: 10gbit, pfc: {xoff: dynamic, xon_offset: 6K}}}\n"
      "switches: {buffer: 4M}\n",
      "t.yaml");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->links.defaults.pfc, (PfcShape{kPfcXoffDynamic, 6 * 1024, 0}));
  auto bad = load_scenario_string(
      "name: x\ntopology: {kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 1}\n"
      "links: {default: {pfc: {xoff: dynamic, xon: 6K}}}\n",
      "t.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("xon_offset"), std::string::npos) << bad.error().message;
}

TEST(LinkShapeText, OnlyALiveChangeTurnsASettingOff) {
  LinkShape s;
  ASSERT_TRUE(set_link_shape_field(s, "rate", "off", 1500, ShapeSyntax::Change));
  EXPECT_EQ(s.rate_bps, 0u);
  ASSERT_TRUE(set_link_shape_field(s, "queue", "off", 1500, ShapeSyntax::Change));
  EXPECT_EQ(s.queue_ns, 0u);
  EXPECT_EQ(s.queue_bytes, 0u);
  EXPECT_FALSE(set_link_shape_field(s, "rate", "off", 1500, ShapeSyntax::Scenario));
  EXPECT_FALSE(yaml_accepts("rate", "off"));
  auto r = set_link_shape_field(s, "queue", "100", 4200, ShapeSyntax::Change);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("one 4200-byte packet"), std::string::npos);
}

}  // namespace
}  // namespace fabemu
