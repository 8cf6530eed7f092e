// Crafted frames for BPF_PROG_TEST_RUN: the link model's tests and its cost (tests/bench).
#pragma once

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace fabemu {

inline uint16_t ip_checksum(const uint8_t* h, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += uint32_t(h[i] << 8 | h[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(~sum);
}

// An Ethernet + IPv4 + UDP frame of `size` bytes with the given ECN codepoint.
inline std::vector<uint8_t> udp_frame(size_t size, uint8_t ecn = 2 /* ECT(0) */) {
  std::vector<uint8_t> f(size, 0x5a);
  ethhdr eth{{2, 0, 0, 0, 0, 2}, {2, 0, 0, 0, 0, 1}, htons(ETH_P_IP)};
  iphdr ip{};
  ip.ihl = 5;
  ip.version = 4;
  ip.tos = ecn;
  ip.tot_len = htons(uint16_t(size - sizeof(eth)));
  ip.ttl = 64;
  ip.protocol = IPPROTO_UDP;
  ip.saddr = htonl(0x0a000001);
  ip.daddr = htonl(0x0a000002);
  ip.check = htons(ip_checksum(reinterpret_cast<const uint8_t*>(&ip), sizeof(ip)));
  udphdr udp{htons(12345), htons(9000), htons(uint16_t(size - sizeof(eth) - sizeof(ip))), 0};
  std::memcpy(f.data(), &eth, sizeof(eth));
  std::memcpy(f.data() + sizeof(eth), &ip, sizeof(ip));
  std::memcpy(f.data() + sizeof(eth) + sizeof(ip), &udp, sizeof(udp));
  return f;
}

}  // namespace fabemu
