// Chakra ET files to a program: nodes decoded with libprotobuf, ordered by their dependencies.
#include "replay/chakra.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <map>
#include <set>

#include "chakra_et.pb.h"
#include "replay/schedule.h"
#include "util/files.h"
#include "util/json.h"

namespace fabemu::replay {
namespace {

using fabemu::chakra::AttributeProto;
using fabemu::chakra::Node;

// An integer attribute, whichever integer field the writer chose.
std::optional<int64_t> integer(const Node& n, const std::string& name) {
  for (const AttributeProto& a : n.attr()) {
    if (a.name() != name) continue;
    switch (a.value_case()) {
      case AttributeProto::kInt32Val:
        return a.int32_val();
      case AttributeProto::kInt64Val:
        return a.int64_val();
      case AttributeProto::kUint32Val:
        return a.uint32_val();
      case AttributeProto::kUint64Val:
        return static_cast<int64_t>(a.uint64_val());
      case AttributeProto::kSint32Val:
        return a.sint32_val();
      case AttributeProto::kSint64Val:
        return a.sint64_val();
      case AttributeProto::kFixed32Val:
        return a.fixed32_val();
      case AttributeProto::kFixed64Val:
        return static_cast<int64_t>(a.fixed64_val());
      case AttributeProto::kSfixed32Val:
        return a.sfixed32_val();
      case AttributeProto::kSfixed64Val:
        return a.sfixed64_val();
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<std::string> text(const Node& n, const std::string& name) {
  for (const AttributeProto& a : n.attr())
    if (a.name() == name && a.value_case() == AttributeProto::kStringVal) return a.string_val();
  return std::nullopt;
}

// One file's messages: the metadata, then the nodes.
Result<std::vector<Node>> decode(const std::string& bytes, const std::string& origin) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  // A bad string field is reported below as an invalid message, not logged by protobuf too.
  const google::protobuf::LogSilencer quiet;
  std::vector<Node> nodes;
  bool metadata = true;
  for (int index = 0;; ++index) {
    uint32_t length = 0;
    if (in.CurrentPosition() == static_cast<int>(bytes.size())) break;
    if (!in.ReadVarint32(&length))
      return make_error(origin + ": message " + std::to_string(index) + " at byte " +
                        std::to_string(in.CurrentPosition()) + ": truncated length");
    const int at = in.CurrentPosition();
    if (length > bytes.size() - static_cast<size_t>(at))
      return make_error(origin + ": message " + std::to_string(index) + " at byte " +
                        std::to_string(at) + " (" + std::to_string(length) +
                        " bytes): the file ends inside it");
    const auto limit = in.PushLimit(static_cast<int>(length));
    bool parsed = false;
    if (metadata) {
      fabemu::chakra::GlobalMetadata m;
      parsed = m.ParseFromCodedStream(&in);
    } else {
      Node n;
      parsed = n.ParseFromCodedStream(&in);
      if (parsed) nodes.push_back(std::move(n));
    }
    if (!parsed || !in.ConsumedEntireMessage() || in.BytesUntilLimit() != 0)
      return make_error(origin + ": message " + std::to_string(index) + " at byte " +
                        std::to_string(at) + " (" + (metadata ? "GlobalMetadata" : "Node") + ", " +
                        std::to_string(length) + " bytes): not a valid message");
    in.PopLimit(limit);
    metadata = false;
  }
  if (metadata) return make_error(origin + ": empty (no GlobalMetadata message)");
  return nodes;
}

// The groups file names groups, not what they are for: groups of one size whose ranks do not
// overlap (the tensor-parallel groups, the data-parallel ones) are one kind, named after its
// members ("pg {3,4,5,6}"), so the model routes a kind's collectives together as they run.
void name_kinds(std::map<std::string, Group>& groups) {
  std::vector<std::vector<std::string>> families;
  for (auto& [name, g] : groups) {
    auto fits = [&](const std::vector<std::string>& family) {
      for (const std::string& other : family) {
        const auto& o = groups.at(other).ranks;
        if (o.size() != g.ranks.size()) return false;
        for (int r : g.ranks)
          if (std::find(o.begin(), o.end(), r) != o.end()) return false;
      }
      return true;
    };
    auto f = std::find_if(families.begin(), families.end(), fits);
    if (f == families.end()) f = families.insert(families.end(), std::vector<std::string>{});
    f->push_back(name);
  }
  for (const auto& family : families) {
    std::string kind = "pg " + family[0];
    if (family.size() > 1) {  // "pg {3,4,5,6}", the first four named
      kind = "pg {" + family[0];
      for (size_t i = 1; i < std::min<size_t>(family.size(), 4); ++i) kind += "," + family[i];
      kind += family.size() > 4 ? ",...}" : "}";
    }
    for (const std::string& name : family) groups[name].kind = kind;
  }
}

Result<std::map<std::string, Group>> parse_groups(const std::string& text,
                                                  const std::string& origin, int world) {
  std::map<std::string, Group> groups;
  if (text.empty()) return groups;
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    return make_error(origin + ": byte " + std::to_string(e.byte) + ": not JSON");
  }
  if (!j.is_object())
    return make_error(origin + ": expected an object of groups, e.g. {\"1\": [0, 1]}");
  for (const auto& [name, ranks] : j.items()) {
    if (!ranks.is_array() || ranks.empty())
      return make_error(origin + ": group " + name + ": expected a list of ranks");
    std::vector<int> r;
    for (const Json& x : ranks) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= world)
        return make_error(origin + ": group " + name + ": " + x.dump() + " is not a rank of the " +
                          std::to_string(world) + " traces");
      r.push_back(x.get<int>());
    }
    std::vector<int> sorted = r;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      return make_error(origin + ": group " + name + " lists a rank twice");
    groups[name].ranks = r;
  }
  name_kinds(groups);
  return groups;
}

// One node as an operation (its dependencies resolved by the caller).
Result<Op> to_op(Program& p, const Node& n, int rank, const std::map<std::string, Group>& groups,
                 const std::string& where) {
  Op op;
  op.layer = n.name();
  op.source = static_cast<int>(n.id());
  auto fail = [&](const std::string& what) { return make_error(where + ": " + what); };
  switch (n.type()) {
    case fabemu::chakra::COMP_NODE:
      op.compute_ns = n.duration_micros() * 1000;
      return op;
    case fabemu::chakra::COMM_COLL_NODE: {
      static const std::map<int64_t, Collective> kinds = {
          {fabemu::chakra::ALL_REDUCE, Collective::AllReduce},
          {fabemu::chakra::ALL_GATHER, Collective::AllGather},
          {fabemu::chakra::REDUCE_SCATTER, Collective::ReduceScatter},
          {fabemu::chakra::ALL_TO_ALL, Collective::AllToAll},
          {fabemu::chakra::BROADCAST, Collective::Broadcast}};
      const auto type = integer(n, "comm_type");
      if (!type) return fail("comm_type: missing");
      const auto it = kinds.find(*type);
      if (it == kinds.end())
        return fail("comm_type: " + std::to_string(*type) +
                    " is not replayed; ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL and "
                    "BROADCAST are");
      op.kind = OpKind::Collective;
      op.collective = it->second;
      std::vector<int> members;
      std::string kind = "world";
      if (auto pg = text(n, "pg_name"); pg && !pg->empty() && *pg != "0") {  // "0": every rank
        const auto g = groups.find(*pg);
        if (g == groups.end()) return fail("pg_name: no group '" + *pg + "' in the groups file");
        members = g->second.ranks;
        kind = g->second.kind;
      } else {
        for (int r = 0; r < p.world; ++r) members.push_back(r);
      }
      op.group = add_group(p, members, kind);
      break;
    }
    case fabemu::chakra::COMM_SEND_NODE:
    case fabemu::chakra::COMM_RECV_NODE: {
      const bool send = n.type() == fabemu::chakra::COMM_SEND_NODE;
      const char* key = send ? "comm_dst" : "comm_src";
      const auto peer = integer(n, key);
      if (!peer || *peer < 0 || *peer >= p.world || *peer == rank)
        return fail(std::string(key) + ": " + (peer ? std::to_string(*peer) : "missing") +
                    " is not another rank");
      op.kind = send ? OpKind::Send : OpKind::Recv;
      op.peer = static_cast<int>(*peer);
      op.group =
          add_group(p, send ? std::vector{rank, op.peer} : std::vector{op.peer, rank}, "p2p");
      break;
    }
    default:
      return op;  // waits for what it waits for, takes no time
  }
  const auto size = integer(n, "comm_size");
  if (!size || *size <= 0 || *size > (int64_t{1} << 40))
    return fail("comm_size: " + (size ? std::to_string(*size) : std::string("missing")) +
                " is not a byte count");
  op.bytes = static_cast<uint64_t>(*size);
  return op;
}

// The nodes in an order where every node follows what it depends on (by id among equals).
Result<std::vector<const Node*>> ordered(const std::vector<Node>& nodes,
                                         const std::string& origin) {
  std::map<uint64_t, const Node*> by_id;
  for (const Node& n : nodes)
    if (!by_id.emplace(n.id(), &n).second)
      return make_error(origin + ": node " + std::to_string(n.id()) + " appears twice");
  std::map<uint64_t, size_t> waiting;
  std::map<uint64_t, std::vector<uint64_t>> dependents;
  for (const Node& n : nodes) {
    std::set<uint64_t> deps(n.data_deps().begin(), n.data_deps().end());
    deps.insert(n.ctrl_deps().begin(), n.ctrl_deps().end());
    for (uint64_t d : deps) {
      if (!by_id.count(d))
        return make_error(origin + ": node " + std::to_string(n.id()) + " (" + n.name() +
                          "): depends on node " + std::to_string(d) + ", which is not there");
      dependents[d].push_back(n.id());
    }
    waiting[n.id()] = deps.size();
  }
  std::set<uint64_t> ready;
  for (const auto& [id, count] : waiting)
    if (count == 0) ready.insert(id);
  std::vector<const Node*> out;
  while (!ready.empty()) {
    const uint64_t id = *ready.begin();
    ready.erase(ready.begin());
    out.push_back(by_id[id]);
    for (uint64_t d : dependents[id])
      if (--waiting[d] == 0) ready.insert(d);
  }
  if (out.size() != nodes.size())
    return make_error(origin + ": " + std::to_string(nodes.size() - out.size()) +
                      " nodes depend on each other in a circle");
  return out;
}

}  // namespace

std::string delimited(const std::string& message_bytes) {
  std::string out;
  google::protobuf::io::StringOutputStream raw(&out);
  {
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.WriteVarint32(static_cast<uint32_t>(message_bytes.size()));
    coded.WriteRaw(message_bytes.data(), static_cast<int>(message_bytes.size()));
  }
  return out;
}

Result<Program> parse_chakra(const std::vector<std::string>& ranks,
                             const std::vector<std::string>& origins,
                             const std::string& groups_json, const std::string& groups_origin) {
  Program p;
  p.format = "chakra";
  p.world = static_cast<int>(ranks.size());
  if (p.world == 0) return make_error("no Chakra trace (PREFIX.0.et) to read", ENOENT);
  auto groups = parse_groups(groups_json, groups_origin, p.world);
  if (!groups) return groups.error();
  size_t total = 0;
  for (int r = 0; r < p.world; ++r) {
    auto nodes = decode(ranks[r], origins[r]);
    if (!nodes) return nodes.error();
    auto order = ordered(*nodes, origins[r]);
    if (!order) return order.error();
    std::map<uint64_t, size_t> index;
    std::vector<Op> ops;
    for (const Node* n : *order) {
      const std::string where = origins[r] + ": node " + std::to_string(n->id()) +
                                (n->name().empty() ? "" : " (" + n->name() + ")");
      auto op = to_op(p, *n, r, *groups, where);
      if (!op) return op.error();
      std::set<uint64_t> deps(n->data_deps().begin(), n->data_deps().end());
      deps.insert(n->ctrl_deps().begin(), n->ctrl_deps().end());
      for (uint64_t d : deps) op->deps.push_back(index.at(d));
      index[n->id()] = ops.size();
      ops.push_back(std::move(*op));
    }
    total += ops.size();
    if (total > kMaxOperations)
      return make_error(origins[r] + ": the traces hold more than " +
                        std::to_string(kMaxOperations) + " operations, what a replay holds");
    p.ranks.push_back(std::move(ops));
  }
  p.source = origins[0];
  if (auto v = validate(p); !v) return v.error();
  FABEMU_TRY(check_finishes(p));
  return p;
}

std::string chakra_file(const std::string& prefix, int rank) {
  return prefix + "." + std::to_string(rank) + ".et";
}

Result<Program> read_chakra(const std::string& prefix, const std::string& groups_file) {
  std::vector<std::string> ranks, origins;
  for (int r = 0;; ++r) {
    const std::string path = chakra_file(prefix, r);
    if (!path_exists(path)) break;
    auto bytes = read_file(path);
    if (!bytes) return bytes.error();
    ranks.push_back(std::move(*bytes));
    origins.push_back(path);
  }
  if (ranks.empty())
    return make_error(prefix + ".0.et: no such file (a Chakra trace is PREFIX.<rank>.et)", ENOENT);
  std::string groups;
  if (!groups_file.empty()) {
    auto g = read_file(groups_file);
    if (!g) return g.error();
    groups = std::move(*g);
  }
  auto p = parse_chakra(ranks, origins, groups, groups_file);
  if (p) p->source = prefix;
  return p;
}

}  // namespace fabemu::replay
