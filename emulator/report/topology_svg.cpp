// The topology picture of the report and of `fabemu graph`: layered by tier, links coloured by
// load and drops; a big fabric's wide tiers collapsed so that the picture fits a screen.
#include "report/svg.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "util/units.h"

namespace fabemu {

namespace {

// A tier of more than kFullRow nodes is collapsed: 24 nodes at the 46 px pitch of the picture are
// 1164 px, the widest row that stays under kMaxWidth with the switch boxes and names unshrunk.
constexpr size_t kFullRow = 24;
constexpr double kMaxWidth = 1200, kPitch = 46, kRowHeight = 110;
// A collapsed row shows its first kHead nodes (a whole pod of a k=16 fat-tree: the generators
// number nodes pod by pod), up to kNotable more where a link dropped frames or a fault struck,
// and its last one: at most 13 nodes and 5 two-slot "more" boxes, 23 slots.
constexpr size_t kHead = 8, kNotable = 4;
constexpr double kTitleHeight = 24;  // the summary line above a collapsed picture

using svg_detail::num;

// What the run did to each link (zeros without a report) and which fault steps struck it.
struct LinkStats {
  std::vector<double> load, bytes;
  std::vector<uint64_t> drops, packets;
  std::vector<int> faults;                      // per link: fault steps that targeted it
  std::vector<const std::string*> first_fault;  // per link: the first one's description
  std::vector<int> node_faults;                 // per node: host fault steps
  LinkDowns downs;                              // links the faults took down

  // More than 1% of the frames dropped: a congested TCP link tail-drops a few by design.
  bool dropped(size_t i) const { return drops[i] > 0 && drops[i] * 100 > packets[i] + drops[i]; }
  bool went_down(size_t i) const { return downs.times_down[i] > 0 || downs.down_at_end[i]; }
  bool notable(size_t i) const { return dropped(i) || faults[i] > 0 || went_down(i); }
};

LinkStats link_stats(const Topology& t, const RunReport* r) {
  const size_t n = t.links.size();
  LinkStats s{std::vector<double>(n, 0),
              std::vector<double>(n, 0),
              std::vector<uint64_t>(n, 0),
              std::vector<uint64_t>(n, 0),
              std::vector<int>(n, 0),
              std::vector<const std::string*>(n, nullptr),
              std::vector<int>(t.nodes.size(), 0),
              link_downs(t, r ? r->faults : std::vector<AppliedFault>{})};
  if (!r) return s;
  double max_bytes = 0;
  if (r->samples.size() >= 2) {
    const double secs = std::max(1e-3, run_seconds(*r));
    for (size_t d = 0; d < r->samples.back().dirs.size() && d / 2 < n; ++d) {
      const size_t link = d / 2;
      const DirectionSample g = run_growth(*r, d);
      const double got = double(g.bytes);
      s.bytes[link] = std::max(s.bytes[link], got);
      s.drops[link] += g.drops;
      s.packets[link] += g.packets;
      const LinkShape& shape = d % 2 ? t.links[link].b_to_a : t.links[link].a_to_b;
      if (shape.rate_bps && *shape.rate_bps)
        s.load[link] = std::max(s.load[link], got * 8 / secs / double(*shape.rate_bps));
      max_bytes = std::max(max_bytes, got);
    }
    // Unshaped links have no rate to compare with: against the busiest link instead.
    for (size_t i = 0; i < n; ++i)
      if (!t.links[i].a_to_b.rate_bps && max_bytes > 0) s.load[i] = s.bytes[i] / max_bytes;
  }
  // A flap repeats its target many times: each name is looked up once.
  std::map<std::string, std::vector<int>> links_of_target;
  for (const AppliedFault& f : r->faults) {
    const FaultStep& step = f.step;
    if (step.kind == FaultStep::Kind::Shape || step.link_step()) {
      auto [it, fresh] = links_of_target.try_emplace(step.target);
      if (fresh)
        if (auto dirs = find_directions(t, step.target); dirs.ok())
          for (const Direction& d : *dirs)
            if (std::find(it->second.begin(), it->second.end(), d.link) == it->second.end())
              it->second.push_back(d.link);
      for (int l : it->second)
        if (!s.faults[l]++) s.first_fault[l] = &step.what;
    } else if (const int node = step.target.empty() ? -1 : t.find(step.target); node >= 0) {
      ++s.node_faults[node];
    }
  }
  return s;
}

// What earns a node its place in a collapsed row: faults that struck it or its links (first: the
// scenario asked for them), then frames dropped on its links that the picture draws red.
struct Notability {
  uint64_t faults = 0, drops = 0;
  explicit operator bool() const { return faults || drops; }
  Notability& operator+=(const Notability& o) {
    faults += o.faults;
    drops += o.drops;
    return *this;
  }
  auto operator<=>(const Notability&) const = default;
};

// What the picture draws at one place: a node, the hosts behind one switch ("16 hosts"), or the
// run of nodes a collapsed row leaves out ("… 247 more leaves").
struct Item {
  enum class Kind { Node, Hosts, More } kind = Kind::Node;
  std::vector<int> nodes;
  int parent = -1;        // Hosts: the item of the switch they hang off
  double slots = 1;       // width, in kPitch
  Notability notability;  // of its nodes together
  int row = 0;
  double x = 0, y = 0;
};

struct Layout {
  std::vector<Item> items;
  std::vector<int> item_of;  // node -> item
  double width = 0, height = 0, top = 0;
  bool collapsed = false;
};

// The row with only its first kHead items, the kNotable most notable after them and the
// last; each run of two or more left out becomes one "more" item.
std::vector<Item> collapse(std::vector<Item> row) {
  const size_t n = row.size();
  if (n <= kFullRow) return row;
  std::vector<bool> keep(n, false);
  for (size_t i = 0; i < kHead; ++i) keep[i] = true;
  keep[n - 1] = true;
  std::vector<size_t> notable;
  for (size_t i = kHead; i + 1 < n; ++i)
    if (row[i].notability) notable.push_back(i);
  std::stable_sort(notable.begin(), notable.end(),
                   [&](size_t a, size_t b) { return row[a].notability > row[b].notability; });
  for (size_t k = 0; k < std::min(kNotable, notable.size()); ++k) keep[notable[k]] = true;
  std::vector<Item> out;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && !keep[j]) ++j;
    if (j - i < 2) {  // kept, or left out alone: the node is narrower than a "more" box
      out.push_back(std::move(row[i]));
      i = std::max(j, i + 1);
      continue;
    }
    Item more;
    more.kind = Item::Kind::More;
    more.slots = 2;
    for (size_t k = i; k < j; ++k) {
      more.nodes.insert(more.nodes.end(), row[k].nodes.begin(), row[k].nodes.end());
      more.notability += row[k].notability;
    }
    out.push_back(std::move(more));
    i = j;
  }
  return out;
}

// A collapsed picture's host row: the hosts behind each drawn switch (their first link's peer)
// as one item, under it; hosts without a switch stay nodes.
std::vector<Item> host_row(const Topology& t, const std::vector<int>& hosts, const Layout& l,
                           const std::vector<Notability>& notability) {
  std::map<size_t, Item> by_parent;  // parent item, or past every item for a lone host
  for (int h : hosts) {
    int parent = -1;
    if (!t.links_of(h).empty()) {
      const int peer = t.links[t.links_of(h).front()].peer(h).node;
      if (t.nodes[peer].role == Role::Switch) parent = l.item_of[peer];
    }
    Item& it = by_parent[parent >= 0 ? size_t(parent) : l.items.size() + size_t(h)];
    it.parent = parent;
    it.nodes.push_back(h);
    it.notability += notability[h];
  }
  std::vector<Item> row;
  for (auto& [key, it] : by_parent) {
    if (it.nodes.size() > 1) {  // only hosts behind a switch share an item
      const bool under_more = l.items[it.parent].kind == Item::Kind::More;
      it.kind = under_more ? Item::Kind::More : Item::Kind::Hosts;
      it.slots = under_more ? 2 : 1;
    }
    row.push_back(std::move(it));
  }
  return collapse(std::move(row));
}

// One row per tier, the highest at the top, items spread evenly over the width; a row wider than
// kFullRow collapsed (and then the hosts grouped under their switches).
Layout layout(const Topology& t, const LinkStats& stats) {
  std::map<int, std::vector<int>> tiers;  // tier -> nodes, in model order
  for (size_t i = 0; i < t.nodes.size(); ++i) tiers[t.nodes[i].tier].push_back(static_cast<int>(i));
  Layout l;
  for (const auto& [tier, nodes] : tiers) l.collapsed |= nodes.size() > kFullRow;
  std::vector<Notability> notability(t.nodes.size());
  for (size_t n = 0; n < t.nodes.size(); ++n) notability[n].faults = uint64_t(stats.node_faults[n]);
  for (size_t i = 0; i < t.links.size(); ++i)
    if (stats.notable(i))
      for (int end : {t.links[i].a.node, t.links[i].b.node})
        notability[end] += {uint64_t(stats.faults[i]), stats.dropped(i) ? stats.drops[i] : 0};
  l.item_of.assign(t.nodes.size(), -1);
  std::vector<std::pair<size_t, size_t>> rows;  // [first, last) item of each row
  double widest = 1;
  for (auto it = tiers.rbegin(); it != tiers.rend(); ++it) {
    const std::vector<int>& nodes = it->second;
    const bool hosts = std::all_of(nodes.begin(), nodes.end(),
                                   [&](int n) { return t.nodes[n].role == Role::Host; });
    std::vector<Item> row;
    if (l.collapsed && hosts && nodes.size() > kFullRow) {
      row = host_row(t, nodes, l, notability);
    } else {
      for (int n : nodes) row.push_back({Item::Kind::Node, {n}, -1, 1, notability[n]});
      if (l.collapsed) row = collapse(std::move(row));
    }
    const size_t first = l.items.size();
    double slots = 0;
    for (Item& item : row) {
      item.row = static_cast<int>(rows.size());
      for (int n : item.nodes) l.item_of[n] = static_cast<int>(l.items.size());
      slots += item.slots;
      l.items.push_back(std::move(item));
    }
    rows.push_back({first, l.items.size()});
    widest = std::max(widest, slots);
  }
  l.width = std::min(kMaxWidth, std::max(480.0, kPitch * widest + 60));
  l.top = l.collapsed ? kTitleHeight : 0;
  l.height = kRowHeight * double(rows.size()) + 40 + l.top;
  for (const auto& [first, last] : rows) {
    double slots = 0, before = 0;
    for (size_t i = first; i < last; ++i) slots += l.items[i].slots;
    // Hosts grouped by switch sit under it when every group has one in the same row.
    bool under = l.items[first].parent >= 0;
    for (size_t i = first; i < last && under; ++i)
      under = l.items[i].parent >= 0 &&
              l.items[l.items[i].parent].row == l.items[l.items[first].parent].row;
    for (size_t i = first; i < last; ++i) {
      Item& item = l.items[i];
      item.x =
          under ? l.items[item.parent].x : (l.width - 60) * (before + item.slots / 2) / slots + 30;
      item.y = 50.0 + l.top + kRowHeight * item.row;
      before += item.slots;
    }
  }
  return l;
}

// Green (idle) through yellow to orange (busy): the share of the link's rate it carried.
std::string load_colour(double load) {
  load = std::clamp(load, 0.0, 1.0);
  const int r = static_cast<int>(60 + 195 * std::min(1.0, 2 * load));
  const int g = static_cast<int>(170 - 60 * std::max(0.0, 2 * load - 1));
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x40", r, g);
  return buf;
}

std::string line(double x1, double y1, double x2, double y2, const std::string& colour,
                 const std::string& width, const char* dash = nullptr) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
         num(y2) + "\" stroke=\"" + colour + "\" stroke-width=\"" + width + "\"" +
         (dash ? std::string(" stroke-dasharray=\"") + dash + "\"" : "") + "/>";
}

// "leaf9 … leaf255", or the node's name.
std::string item_name(const Topology& t, const Item& item) {
  if (item.nodes.size() == 1) return t.nodes[item.nodes.front()].name;
  return t.nodes[item.nodes.front()].name + " … " + t.nodes[item.nodes.back()].name;
}

// What the nodes of an item are, in the plural: "hosts", "leaves" (the name without its number,
// when they all share it and it reads as a word: "sw" or "n-su" would not), else "switches".
std::string plural_noun(const Topology& t, const std::vector<int>& nodes) {
  auto stem = [&](int n) {
    const std::string& name = t.nodes[n].name;
    return name.substr(0, name.find_last_not_of("0123456789") + 1);
  };
  if (std::all_of(nodes.begin(), nodes.end(), [&](int n) { return t.nodes[n].role == Role::Host; }))
    return "hosts";
  const std::string s = stem(nodes.front());
  if (s.size() < 3 ||
      !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalpha(c) != 0; }) ||
      !std::all_of(nodes.begin(), nodes.end(), [&](int n) { return stem(n) == s; }))
    return "switches";
  if (s.ends_with("f")) return s.substr(0, s.size() - 1) + "ves";
  if (s.ends_with("s") || s.ends_with("x") || s.ends_with("ch") || s.ends_with("sh"))
    return s + "es";
  return s + "s";
}

// Links a fault took down: dashed over their load colour, with a mark at the middle: "✕" in
// red while still down at the end, "↓" in violet when it came back.
constexpr const char* kDownDash = "6 4";
std::string down_class(int times_down, bool down_at_end) {
  return down_at_end ? " down-at-end" : times_down ? " went-down" : "";
}
std::string down_mark(double x, double y, bool down_at_end) {
  return "<text class=\"down-mark\" x=\"" + num(x) + "\" y=\"" + num(y + 4) +
         "\" font-size=\"15\" font-weight=\"bold\" text-anchor=\"middle\" stroke=\"#fbfbfb\" "
         "stroke-width=\"3\" paint-order=\"stroke\" fill=\"" +
         (down_at_end ? "#c62828\">✕" : "#6a3d9a\">↓") + "</text>";
}

// One link between two nodes drawn one by one, as a small picture draws every link.
std::string link_svg(const Topology& t, const Layout& l, const LinkStats& st, size_t i,
                     bool report) {
  const Link& k = t.links[i];
  const std::string name = link_name(t, k);
  const bool dropped = st.dropped(i);
  const std::string colour = dropped ? "#d62728" : report ? load_colour(st.load[i]) : "#8a8a8a";
  char tip[200];
  std::snprintf(tip, sizeof tip,
                "%s: %.1f%% of its rate (busier direction), %.2f MB, %llu "
                "frames dropped",
                name.c_str(), 100 * st.load[i], st.bytes[i] / 1e6,
                static_cast<unsigned long long>(st.drops[i]));
  std::string title = tip;
  if (st.faults[i])
    title += "; fault: " + *st.first_fault[i] +
             (st.faults[i] > 1 ? " and " + std::to_string(st.faults[i] - 1) + " more steps" : "");
  const int times_down = st.downs.times_down[i];
  const bool down_at_end = st.downs.down_at_end[i];
  if (times_down || down_at_end)
    title += "; taken down " + std::to_string(times_down) + (times_down == 1 ? " time" : " times") +
             (down_at_end ? ", still DOWN at the end" : ", up again at the end");
  const Item &a = l.items[l.item_of[k.a.node]], &b = l.items[l.item_of[k.b.node]];
  return "<g class=\"link" + down_class(times_down, down_at_end) + "\" data-link=\"" +
         xml_escape(name) + "\"><title>" + xml_escape(title) + "</title>" +
         line(a.x, a.y, b.x, b.y, colour,
              dropped  ? "4"
              : report ? num(1.5 + 3 * st.load[i])
                       : "1.5",
              times_down || down_at_end ? kDownDash : nullptr) +
         "</g>\n";
}

// The marks of the links drawn one by one that a fault took down, over every line: a third of
// the way up from the lower end (the middles of two links that cross coincide).
std::string down_marks_svg(const Topology& t, const Layout& l, const LinkStats& st) {
  std::string s;
  for (size_t i = 0; i < t.links.size(); ++i) {
    const Item &a = l.items[l.item_of[t.links[i].a.node]],
               &b = l.items[l.item_of[t.links[i].b.node]];
    if (!st.went_down(i) || a.kind != Item::Kind::Node || b.kind != Item::Kind::Node) continue;
    const Item &low = a.y >= b.y ? a : b, &high = a.y >= b.y ? b : a;
    s += down_mark(low.x + (high.x - low.x) / 3, low.y + (high.y - low.y) / 3,
                   st.downs.down_at_end[i]);
  }
  return s.empty() ? s : "<g class=\"down-marks\">" + s + "</g>\n";
}

// The links between two items of which one (or both) stands for several nodes: one line, the
// count on it, the worst of them in its colour and the figures in its tooltip.
struct Bundle {
  int links = 0, dropped = 0, faulted = 0;
  int went_down = 0, down_at_end = 0;  // links a fault took down, those still down
  double load = 0, bytes = 0;
  uint64_t drops = 0;
  std::vector<size_t> notable;  // the first few notable links, to name
};

// `at`: where the count sits, as a share of the way from the first end to the second.
std::string bundle_svg(const Topology& t, const Layout& l, std::pair<int, int> ends,
                       const Bundle& b, double at, bool report) {
  const Item &from = l.items[ends.first], &to = l.items[ends.second];
  const std::string colour = b.dropped ? "#d62728" : report ? load_colour(b.load) : "#8a8a8a";
  const double extra = std::min(3.0, std::log2(double(b.links)) / 2);
  char figures[120];
  std::snprintf(figures, sizeof figures,
                ": the busiest at %.1f%% of its rate, %.2f MB at most, %llu frames dropped",
                100 * b.load, b.bytes / 1e6, static_cast<unsigned long long>(b.drops));
  std::string title = std::to_string(b.links) + " links between " + item_name(t, from) + " and " +
                      item_name(t, to) + figures;
  if (b.dropped) title += "; " + std::to_string(b.dropped) + " dropped more than 1%";
  if (b.faulted) title += "; " + std::to_string(b.faulted) + " struck by a fault";
  if (b.went_down)
    title += "; " + std::to_string(b.went_down) + " taken down by a fault, " +
             std::to_string(b.down_at_end) + " still down at the end";
  for (size_t k = 0; k < b.notable.size(); ++k)
    title += (k ? ", " : ": ") + link_name(t, t.links[b.notable[k]]);
  if (b.dropped + b.faulted > int(b.notable.size())) title += ", …";
  std::string label = b.links > 1 ? "×" + std::to_string(b.links) : "";
  if (b.dropped) label += (label.empty() ? "" : ", ") + std::to_string(b.dropped) + " dropping";
  if (b.down_at_end) label += (label.empty() ? "" : ", ") + std::to_string(b.down_at_end) + " down";
  std::string s = "<g class=\"bundle" + down_class(b.went_down, b.down_at_end > 0) +
                  "\" data-links=\"" + std::to_string(b.links) + "\"><title>" + xml_escape(title) +
                  "</title>" +
                  line(from.x, from.y, to.x, to.y, colour,
                       num((b.dropped ? 4
                            : report  ? 1.5 + 3 * b.load
                                      : 1.5) +
                           extra),
                       b.went_down ? kDownDash : nullptr);
  if (!label.empty())
    s += "<text x=\"" + num(from.x + at * (to.x - from.x)) + "\" y=\"" +
         num(from.y + at * (to.y - from.y) + 3) +
         "\" font-size=\"9\" text-anchor=\"middle\" fill=\"" +
         (b.dropped || b.down_at_end ? "#d62728" : "#333") +
         "\" stroke=\"#fbfbfb\" stroke-width=\"3\" paint-order=\"stroke\">" + label + "</text>";
  return s + "</g>\n";
}

std::string item_svg(const Topology& t, const Item& item, size_t inner_links) {
  const std::string x = num(item.x), count = std::to_string(item.nodes.size());
  if (item.kind == Item::Kind::Node) {
    const Node& n = t.nodes[item.nodes.front()];
    const bool host = n.role == Role::Host;
    std::string s = "<g class=\"node " + std::string(host ? "host" : "switch") + "\" data-node=\"" +
                    xml_escape(n.name) + "\"><title>" + xml_escape(n.name) + "</title>";
    if (host)
      s += "<circle cx=\"" + x + "\" cy=\"" + num(item.y) + "\" r=\"11\" fill=\"#4c78a8\"/>";
    else
      s += "<rect x=\"" + num(item.x - 20) + "\" y=\"" + num(item.y - 12) +
           "\" width=\"40\" height=\"24\" rx=\"4\" fill=\"#555\"/>";
    return s + "<text x=\"" + x + "\" y=\"" + num(item.y + (host ? 26 : 4)) +
           "\" font-size=\"10\" text-anchor=\"middle\" fill=\"" + (host ? "#222" : "#fff") + "\">" +
           xml_escape(n.name) + "</text></g>\n";
  }
  const bool more = item.kind == Item::Kind::More;
  const std::string noun = plural_noun(t, item.nodes);
  std::string title = more ? "… " + count + " more " + noun + ": " + item_name(t, item)
                           : item_name(t, item) + ": " + count + " " + noun;
  if (item.notability) title += "; drops or faults on some of them (see the links' tooltips)";
  if (inner_links) title += "; " + std::to_string(inner_links) + " links among them";
  const double w = more ? 2 * kPitch - 6 : 40;
  std::string s = "<g class=\"group " + std::string(more ? "more" : "hosts") + "\" data-nodes=\"" +
                  count + "\"><title>" + xml_escape(title) + "</title><rect x=\"" +
                  num(item.x - w / 2) + "\" y=\"" + num(item.y - 13) + "\" width=\"" + num(w) +
                  "\" height=\"26\" rx=\"" + (more ? "4" : "7") + "\" fill=\"" +
                  (more ? "#eee" : "#4c78a8") + "\"";
  if (more)
    s += std::string(" stroke=\"") + (item.notability ? "#d62728" : "#888") +
         "\" stroke-dasharray=\"4 3\"";
  const std::string ink = more ? "#222" : "#fff";
  return s + "/><text x=\"" + x + "\" y=\"" + num(item.y - 1) +
         "\" font-size=\"10\" text-anchor=\"middle\" fill=\"" + ink + "\">" +
         (more ? "… " + count + " more" : count) + "</text><text x=\"" + x + "\" y=\"" +
         num(item.y + 9) + "\" font-size=\"8\" text-anchor=\"middle\" fill=\"" + ink + "\">" +
         xml_escape(noun) + "</text></g>\n";
}

// What the colours and marks of a report's picture mean, in rows along its bottom edge from
// `top`, as wide as the picture; the height it takes.
std::pair<std::string, double> legend_svg(double top, double width) {
  constexpr double kRow = 18;
  std::string s = "<g class=\"legend\" font-size=\"10\" fill=\"#222\">";
  double x = 30, y = top + kRow / 2 + 2;
  auto entry = [&](const std::string& colour, const std::string& stroke, const char* dash,
                   const std::string& mark, bool mark_red, const std::string& text) {
    const double w = 36 + 5.6 * double(text.size()) + 18;
    if (x > 30 && x + w > width - 10) x = 30, y += kRow;
    s += line(x, y, x + 30, y, colour, stroke, dash);
    if (!mark.empty()) s += down_mark(x + 15, y - 1, mark_red);
    s += "<text x=\"" + num(x + 36) + "\" y=\"" + num(y + 4) + "\">" + xml_escape(text) + "</text>";
    x += w;
  };
  entry(load_colour(0), "1.5", nullptr, "", false, "idle");
  entry(load_colour(1), "4.5", nullptr, "", false, "busy (share of its rate)");
  entry("#d62728", "4", nullptr, "", false, "dropped > 1% of frames");
  entry(load_colour(0), "1.5", kDownDash, "↓", false, "taken down by a fault, up again");
  entry(load_colour(0), "1.5", kDownDash, "✕", true, "down at the end");
  return {s + "</g>\n", y + kRow / 2 - top};
}

}  // namespace

bool topology_collapsed(const Topology& t) {
  std::map<int, size_t> per_tier;
  for (const Node& n : t.nodes)
    if (++per_tier[n.tier] > kFullRow) return true;
  return false;
}

std::string topology_svg(const LabModel& m, const RunReport* r) {
  const Topology& t = m.topo;
  const LinkStats st = link_stats(t, r);
  const Layout l = layout(t, st);
  const auto [legend, legend_height] =
      r ? legend_svg(l.height - 14, l.width) : std::pair<std::string, double>{};
  const double height = l.height - (r ? 14 : 0) + legend_height;
  std::string s = "<svg id=\"topology\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                  num(l.width) + "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(l.width) +
                  " " + num(height) +
                  "\" style=\"max-width:100%;height:auto\" font-family=\"sans-serif\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#fbfbfb\"/>\n";
  std::string bundles, links;
  std::map<std::pair<int, int>, Bundle> by_ends;
  std::vector<size_t> inner(l.items.size(), 0);  // links between nodes of one item
  for (size_t i = 0; i < t.links.size(); ++i) {
    const int a = l.item_of[t.links[i].a.node], b = l.item_of[t.links[i].b.node];
    if (l.items[a].kind == Item::Kind::Node && l.items[b].kind == Item::Kind::Node) {
      links += link_svg(t, l, st, i, r != nullptr);
      continue;
    }
    if (a == b) {
      ++inner[a];
      continue;
    }
    Bundle& bundle = by_ends[{std::min(a, b), std::max(a, b)}];
    ++bundle.links;
    bundle.load = std::max(bundle.load, st.load[i]);
    bundle.bytes = std::max(bundle.bytes, st.bytes[i]);
    bundle.drops += st.drops[i];
    bundle.dropped += st.dropped(i);
    bundle.faulted += st.faults[i] > 0;
    bundle.went_down += st.went_down(i);
    bundle.down_at_end += st.downs.down_at_end[i];
    if (st.notable(i) && bundle.notable.size() < 3) bundle.notable.push_back(i);
  }
  // Many bundles meet at a "more" box: their counts go nearer the other end, where the lines
  // are apart.
  std::vector<size_t> meeting(l.items.size(), 0);
  for (const auto& [ends, bundle] : by_ends) ++meeting[ends.first], ++meeting[ends.second];
  for (const auto& [ends, bundle] : by_ends) {
    const size_t a = meeting[ends.first], b = meeting[ends.second];
    bundles += bundle_svg(t, l, ends, bundle, a < b ? 0.3 : a > b ? 0.7 : 0.5, r != nullptr);
  }
  if (l.collapsed) {
    size_t drawn = 0;
    for (const Item& item : l.items) drawn += item.kind == Item::Kind::Node;
    s += "<text class=\"summary\" x=\"30\" y=\"20\" font-size=\"12\" fill=\"#222\">" +
         std::to_string(t.host_count()) + " hosts, " + std::to_string(t.switches().size()) +
         " switches, " + std::to_string(t.links.size()) +
         " links (tiers collapsed: " + std::to_string(drawn) + " of " +
         std::to_string(t.nodes.size()) + " nodes shown)</text>\n";
  }
  s += bundles + links + down_marks_svg(t, l, st);
  // In model order, as a small picture always drew its nodes.
  std::vector<size_t> order(l.items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return l.items[a].nodes.front() < l.items[b].nodes.front();
  });
  for (size_t i : order) s += item_svg(t, l.items[i], inner[i]);
  s += legend;
  return s + "</svg>\n";
}

}  // namespace fabemu
