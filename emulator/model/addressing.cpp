// Address planning and /etc/hosts generation.
#include "model/addressing.h"

#include <algorithm>
#include <charconv>

namespace fabemu {

std::string Ipv4::str() const {
  return std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 255) + "." +
         std::to_string((v >> 8) & 255) + "." + std::to_string(v & 255);
}

std::string Prefix::str() const {
  return addr.str() + "/" + std::to_string(len);
}

bool Prefix::contains(Ipv4 ip) const {
  uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
  return (ip.v & mask) == (addr.v & mask);
}

std::optional<Ipv4> parse_ipv4(std::string_view s) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    unsigned octet = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), octet);
    if (ec != std::errc() || octet > 255 || p == s.data()) return std::nullopt;
    v = (v << 8) | octet;
    s.remove_prefix(p - s.data());
    if (i < 3) {
      if (s.empty() || s[0] != '.') return std::nullopt;
      s.remove_prefix(1);
    }
  }
  if (!s.empty()) return std::nullopt;
  return Ipv4{v};
}

Prefix lab_pool(int index) {
  return Prefix{Ipv4{(10u << 24) | ((64u + index) << 16)}, 16};
}

namespace {

uint64_t round_up_pow2(uint64_t x) {
  uint64_t p = 2;
  while (p < x) p <<= 1;
  return p;
}

int prefix_len_for(uint64_t size) {
  int len = 32;
  while ((uint64_t{1} << (32 - len)) < size) --len;
  return len;
}

}  // namespace

Result<AddressPlan> plan_addresses(const Topology& t, Prefix pool) {
  AddressPlan plan;
  plan.pool = pool;
  plan.links.resize(t.links.size());
  plan.loopback.resize(t.nodes.size());
  plan.edge_block.resize(t.nodes.size());

  // Host-facing links of each switch, and the block size they need.
  struct Block {
    int sw;
    std::vector<int> links;
    uint64_t size;
  };
  std::vector<Block> blocks;
  std::vector<bool> assigned(t.links.size(), false);
  for (int sw : t.switches()) {
    Block b{sw, {}, 0};
    for (int l : t.links_of(sw))
      if (t.nodes[t.links[l].peer(sw).node].role == Role::Host) b.links.push_back(l);
    if (b.links.empty()) continue;
    b.size = round_up_pow2(2 * b.links.size());
    blocks.push_back(std::move(b));
  }
  // Largest first keeps every block aligned without holes in between.
  std::stable_sort(blocks.begin(), blocks.end(),
                   [](const Block& x, const Block& y) { return x.size > y.size; });

  uint64_t next = 0;
  auto overflow = [&]() {
    return make_error("address plan: the fabric needs more than the lab's " + pool.str() + " (" +
                      std::to_string(t.links.size()) + " links, " + std::to_string(t.nodes.size()) +
                      " nodes)");
  };
  if (pool.size() < t.nodes.size() + 2) return overflow();
  const uint64_t capacity = pool.size() - t.nodes.size() - 2;  // loopbacks sit at the top
  for (const auto& b : blocks) {
    if (next + b.size > capacity) return overflow();
    plan.edge_block[b.sw] =
        Prefix{Ipv4{pool.addr.v + static_cast<uint32_t>(next)}, prefix_len_for(b.size)};
    for (size_t i = 0; i < b.links.size(); ++i) {
      int l = b.links[i];
      Ipv4 sw_ip{pool.addr.v + static_cast<uint32_t>(next + 2 * i)};
      Ipv4 host_ip{sw_ip.v + 1};
      bool sw_is_a = t.links[l].a.node == b.sw;
      plan.links[l] = sw_is_a ? LinkAddresses{sw_ip, host_ip} : LinkAddresses{host_ip, sw_ip};
      assigned[l] = true;
    }
    next += b.size;
  }
  for (size_t l = 0; l < t.links.size(); ++l) {
    if (assigned[l]) continue;
    if (next + 2 > capacity) return overflow();
    Ipv4 a{pool.addr.v + static_cast<uint32_t>(next)};
    plan.links[l] = LinkAddresses{a, Ipv4{a.v + 1}};
    next += 2;
  }
  // Loopbacks count down from the top of the pool (skipping the broadcast-looking .255.255).
  uint32_t top = pool.addr.v + static_cast<uint32_t>(pool.size()) - 2;
  for (int sw : t.switches()) plan.loopback[sw] = Ipv4{top--};
  return plan;
}

std::string hosts_file(const Topology& t, const AddressPlan& plan, const std::string& lab) {
  std::string out = "# fabemu lab " + lab + ": generated, removed by `fabemu down`\n";
  out += "127.0.0.1\tlocalhost\n";
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    int id = static_cast<int>(n);
    Ipv4 ip = t.nodes[n].role == Role::Host ? plan.host_address(t, id) : *plan.loopback[id];
    out += ip.str() + "\t" + t.nodes[n].name + "\n";
  }
  return out;
}

}  // namespace fabemu
