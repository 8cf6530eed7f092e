// Chakra execution traces written from the schema (emulator/replay/chakra_et.proto) for the
// tests: a 2-layer step of 8 ranks, tensor-parallel in 2 groups of 4 and data-parallel in 4
// groups of 2, with one point-to-point send from rank 0 to rank 4.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "chakra_et.pb.h"
#include "replay/chakra.h"

namespace fabemu::testing {

class ChakraRank {
 public:
  // A node of `type` after `deps`; its id.
  uint64_t node(fabemu::chakra::NodeType type, const std::string& name, std::vector<uint64_t> deps,
                uint64_t duration_us = 0) {
    fabemu::chakra::Node n;
    n.set_id(next_++);
    n.set_name(name);
    n.set_type(type);
    for (uint64_t d : deps) n.add_data_deps(d);
    n.set_duration_micros(duration_us);
    nodes_.push_back(n);
    return n.id();
  }
  void attr(uint64_t id, const std::string& key, int64_t v) {
    auto* a = find(id).add_attr();
    a->set_name(key);
    a->set_int64_val(v);
  }
  void attr(uint64_t id, const std::string& key, const std::string& v) {
    auto* a = find(id).add_attr();
    a->set_name(key);
    a->set_string_val(v);
  }
  uint64_t compute(const std::string& name, uint64_t us, std::vector<uint64_t> deps) {
    return node(fabemu::chakra::COMP_NODE, name, std::move(deps), us);
  }
  uint64_t collective(const std::string& name, fabemu::chakra::CollectiveCommType type,
                      int64_t bytes, const std::string& pg, std::vector<uint64_t> deps) {
    const uint64_t id = node(fabemu::chakra::COMM_COLL_NODE, name, std::move(deps));
    attr(id, "comm_type", static_cast<int64_t>(type));
    attr(id, "comm_size", bytes);
    if (!pg.empty()) attr(id, "pg_name", pg);
    return id;
  }
  // The file's bytes: the metadata, then the nodes, each length-delimited.
  std::string bytes() const {
    fabemu::chakra::GlobalMetadata meta;
    meta.set_version("0.0.4");
    std::string out = replay::delimited(meta.SerializeAsString());
    for (const auto& n : nodes_) out += replay::delimited(n.SerializeAsString());
    return out;
  }

 private:
  fabemu::chakra::Node& find(uint64_t id) {
    for (auto& n : nodes_)
      if (n.id() == id) return n;
    return nodes_.back();
  }
  uint64_t next_ = 0;
  std::vector<fabemu::chakra::Node> nodes_;
};

// Process groups "1", "2" (tensor-parallel: ranks 0-3, 4-7) and "3".."6" (data-parallel:
// {0,4}, {1,5}, {2,6}, {3,7}), as ASTRA-sim's --comm-group-configuration writes them.
inline std::string tp_dp_groups_json() {
  return R"({"1": [0, 1, 2, 3], "2": [4, 5, 6, 7], "3": [0, 4], "4": [1, 5], "5": [2, 6],
             "6": [3, 7]})";
}

// Per rank: forward of two layers (compute, a tensor-parallel allreduce each), backward of
// both (compute, a tensor-parallel allreduce, then a data-parallel allreduce of the weight
// gradients that the next layer's compute does not wait for), and rank 0 sends rank 4 an
// activation that rank 4's backward waits for. Sizes in bytes.
inline std::vector<std::string> tp_dp_trace(int64_t tp_bytes, int64_t dp_bytes,
                                            uint64_t compute_us) {
  using fabemu::chakra::ALL_REDUCE;
  std::vector<std::string> out;
  for (int r = 0; r < 8; ++r) {
    ChakraRank t;
    const std::string tp = r < 4 ? "1" : "2", dp = std::to_string(3 + r % 4);
    uint64_t last = t.compute("layer1.fwd", compute_us, {});
    last = t.collective("layer1.fwd.allreduce", ALL_REDUCE, tp_bytes, tp, {last});
    last = t.compute("layer2.fwd", compute_us, {last});
    last = t.collective("layer2.fwd.allreduce", ALL_REDUCE, tp_bytes, tp, {last});
    if (r == 0) {
      const uint64_t s = t.node(fabemu::chakra::COMM_SEND_NODE, "activation.send", {last});
      t.attr(s, "comm_dst", int64_t{4});
      t.attr(s, "comm_size", tp_bytes);
    }
    if (r == 4) {
      const uint64_t v = t.node(fabemu::chakra::COMM_RECV_NODE, "activation.recv", {last});
      t.attr(v, "comm_src", int64_t{0});
      t.attr(v, "comm_size", tp_bytes);
      last = v;
    }
    for (const char* layer : {"layer2", "layer1"}) {
      const std::string l = layer;
      last = t.compute(l + ".bwd", 2 * compute_us, {last});
      t.collective(l + ".wg.allreduce", ALL_REDUCE, dp_bytes, dp, {last});
      last = t.collective(l + ".ig.allreduce", ALL_REDUCE, tp_bytes, tp, {last});
    }
    out.push_back(t.bytes());
  }
  return out;
}

}  // namespace fabemu::testing
