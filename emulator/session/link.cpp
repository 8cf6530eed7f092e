// `link set/down/up`: live changes to a running lab's link model, and reroutes.
#include <algorithm>

#include "apply/link_control.h"
#include "scenario/link_shape_text.h"
#include "session/across.h"
#include "session/session.h"

namespace fabemu::session {

Result<LinkShape> link_change(const LinkRequest& req, uint32_t mtu) {
  LinkShape s;
  bool loss = false, burst = false;
  for (const auto& [key, text] : req.settings) {
    if (text.empty()) continue;
    loss |= key == "loss";
    burst |= key == "loss_burst";
    if (auto r = set_link_shape_field(s, key, text, mtu, ShapeSyntax::Change); !r) {
      std::string option = key == "ecn" ? "--ecn-red" : "--" + std::string(key);
      std::replace(option.begin(), option.end(), '_', '-');
      return with_failure(make_error("link set: " + option + ": " + r.error().message),
                          Failure::BadInput);
    }
  }
  if (loss && burst)
    return with_failure(make_error("link set: give --loss or --loss-burst, not both"),
                        Failure::BadInput);
  if (req.reorder) s.reorder = *req.reorder;
  if (req.down) s.down = *req.down;
  if (s.empty())
    return with_failure(
        make_error(
            "link set: nothing to change; give --rate, --delay, --jitter, --loss, "
            "--loss-burst, --queue, --ecn-threshold, --ecn-red, --pfc, --corrupt, --duplicate "
            "or "
            "--reorder/--no-reorder"),
        Failure::BadInput);
  return s;
}

Result<LinkOutcome> change_link(const LinkRequest& req, const LabPaths& base) {
  FABEMU_TRY(link_change(req, 0));
  if (!req.on.empty()) return link_across(req, base);
  FABEMU_TRY(need_root("link"));
  LabPaths paths = base;
  paths.lab = req.lab;
  auto model = open_lab(paths);
  if (!model) return model.error();
  auto dp = kernel_datapath(*model, paths);
  return change_link(req, *model, paths, *dp);
}

Result<LinkOutcome> change_link(const LinkRequest& req, const LabModel& model,
                                const LabPaths& paths, LabDatapath& dp) {
  // With the lab's MTU: a byte queue must hold one full-size packet.
  auto change = link_change(req, model.scenario.fabric.mtu);
  if (!change) return change.error();
  LinkOutcome out;
  out.lab = req.lab;
  out.link = req.link;
  out.action = !req.down ? "set" : *req.down ? "down" : "up";
  auto done = change_links(paths, model, req.link, *change, {req.accept_degraded}, dp);
  if (!done) {
    const int err = errno_of(done.error());
    if (err == ENOENT || err == EINVAL) return with_failure(done.error(), Failure::BadInput);
    return done.error();
  }
  out.changes = std::move(*done);
  if (!req.down || !req.reroute) return out;
  // Down and up move the routes as the fault timeline does (a lab across machines: every
  // machine its own switches, whoever owns the link).
  auto links = links_named(model.topo, req.link);
  if (!links) return links.error();
  auto rerouted = dp.set_failed_links(*links, *req.down);
  if (!rerouted) return rerouted.error().context("link " + out.action);
  out.rerouted = std::move(*rerouted);
  return out;
}

Json LinkOutcome::to_json() const {
  Json changed = Json::array();
  for (const LinkChange& c : changes)
    changed.push_back({{"direction", c.name},
                       {"before", shape_json(c.before)},
                       {"after", shape_json(c.after)},
                       {"attached_now", c.attached_now}});
  Json j = {{"schema", kSchemaVersion}, {"command", "link"}, {"lab", lab}, {"link", link},
            {"action", action},         {"changes", changed}};
  j["rerouted"] = rerouted ? Json(*rerouted) : Json(nullptr);
  if (!machines.empty()) j["machines"] = machines;
  return j;
}

Json shape_json(const LinkShape& s) {
  Json j = Json::object();
  if (s.rate_bps) j["rate_bps"] = *s.rate_bps;
  if (s.delay_ns) j["delay_ns"] = *s.delay_ns;
  if (s.jitter_ns) j["jitter_ns"] = *s.jitter_ns;
  if (s.loss) j["loss"] = *s.loss;
  if (s.loss_burst)
    j["loss_burst"] = {{"p", s.loss_burst->p},
                       {"r", s.loss_burst->r},
                       {"loss_bad", s.loss_burst->loss_bad},
                       {"loss_good", s.loss_burst->loss_good}};
  if (s.reorder) j["reorder"] = *s.reorder;
  if (s.queue_ns) j["queue_ns"] = *s.queue_ns;
  if (s.queue_bytes) j["queue_bytes"] = *s.queue_bytes;
  if (s.ecn_threshold_ns) j["ecn_threshold_ns"] = *s.ecn_threshold_ns;
  if (s.ecn_threshold_bytes) j["ecn_threshold_bytes"] = *s.ecn_threshold_bytes;
  if (s.ecn && s.ecn->kmax_bytes)
    j["ecn"] = {{"kmin_bytes", s.ecn->kmin_bytes},
                {"kmax_bytes", s.ecn->kmax_bytes},
                {"pmax", s.ecn->pmax}};
  if (s.down) j["down"] = *s.down;
  if (s.pfc && s.pfc->xoff_bytes)
    j["pfc"] = {{"xoff_bytes", s.pfc->xoff_bytes},
                {"xon_bytes", s.pfc->xon_bytes},
                {"watchdog_ns", s.pfc->watchdog_ns}};
  // xoff: dynamic: xoff_bytes is the marker, xon_bytes the offset below the dynamic Xoff.
  if (s.pfc && s.pfc->dynamic()) j["pfc"]["dynamic"] = true;
  if (s.corrupt) j["corrupt"] = *s.corrupt;
  if (s.duplicate) j["duplicate"] = *s.duplicate;
  return j;
}

LinkShape shape_from_json(const Json& j) {
  LinkShape s;
  auto take = [&j](const char* key, auto& field) {
    if (j.is_object() && j.contains(key))
      field = j[key].get<typename std::remove_reference_t<decltype(field)>::value_type>();
  };
  take("rate_bps", s.rate_bps);
  take("delay_ns", s.delay_ns);
  take("jitter_ns", s.jitter_ns);
  take("loss", s.loss);
  take("reorder", s.reorder);
  take("queue_ns", s.queue_ns);
  take("queue_bytes", s.queue_bytes);
  take("ecn_threshold_ns", s.ecn_threshold_ns);
  take("ecn_threshold_bytes", s.ecn_threshold_bytes);
  take("down", s.down);
  take("corrupt", s.corrupt);
  take("duplicate", s.duplicate);
  if (j.is_object() && j.contains("loss_burst")) {
    const Json& b = j["loss_burst"];
    s.loss_burst = BurstLoss{b.value("p", 0.0), b.value("r", 0.0), b.value("loss_bad", 0.0),
                             b.value("loss_good", 0.0)};
  }
  if (j.is_object() && j.contains("ecn")) {
    const Json& r = j["ecn"];
    s.ecn = RedEcn{r.value("kmin_bytes", uint64_t{0}), r.value("kmax_bytes", uint64_t{0}),
                   r.value("pmax", 0.0)};
  }
  if (j.is_object() && j.contains("pfc")) {
    const Json& p = j["pfc"];
    s.pfc = PfcShape{p.value("xoff_bytes", uint64_t{0}), p.value("xon_bytes", uint64_t{0}),
                     p.value("watchdog_ns", uint64_t{0})};
  }
  return s;
}

}  // namespace fabemu::session
