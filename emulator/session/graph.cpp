// `graph`: the topology of a lab or a scenario file, for a picture or as JSON.
#include "scenario/loader.h"
#include "session/session.h"

namespace fabemu::session {

Result<LabModel> topology_of(const std::string& target, const LabPaths& base) {
  if (target.ends_with(".yaml") || target.ends_with(".yml") ||
      target.find('/') != std::string::npos) {
    auto s = load_scenario_file(target);
    if (!s) return with_failure(s.error(), Failure::BadInput);
    auto model = build_model(*s, 0);
    if (!model) return with_failure(model.error(), Failure::BadInput);
    return model;
  }
  LabPaths paths = base;
  paths.lab = target;
  return open_lab(paths);
}

Json topology_json(const LabModel& m) {
  const Topology& t = m.topo;
  Json nodes = Json::array();
  for (const Node& n : t.nodes) {
    Json o = {
        {"name", n.name}, {"role", n.role == Role::Host ? "host" : "switch"}, {"tier", n.tier}};
    if (n.role == Role::Host) o["rank"] = n.rank;
    nodes.push_back(std::move(o));
  }
  Json links = Json::array();
  for (const Link& k : t.links)
    links.push_back({{"name", link_name(t, k)},
                     {"a", t.nodes[k.a.node].name},
                     {"b", t.nodes[k.b.node].name},
                     {"class", k.cls},
                     {"a_to_b", shape_json(k.a_to_b)},
                     {"b_to_a", shape_json(k.b_to_a)}});
  return {{"schema", kSchemaVersion},
          {"command", "graph"},
          {"name", m.scenario.name},
          {"nodes", nodes},
          {"links", links}};
}

}  // namespace fabemu::session
