// Frames as a pcapng capture file (or a classic pcap file, below) (the IETF draft "PCAP Now
// Generic", the format Wireshark and tshark write): one section, an interface per direction
// captured, each frame with its interface, a nanosecond timestamp and its direction. libpcap reads
// pcapng but does not write it, and no packaged library does; the blocks are few and fixed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fabemu {

struct PcapngInterface {
  std::string name;         // if_name: "leaf1:spine1"
  std::string description;  // if_description: "leaf1>spine1 (at leaf1's port spine1)"
  std::string filter;       // if_filter: the capture filter (libpcap syntax), if any
  uint32_t snaplen = 262144;
};

enum class FrameDirection : uint8_t { Unknown = 0, Inbound = 1, Outbound = 2 };

// Appends blocks to `out`; the caller writes them where it likes (a file, a pipe), so that a
// consumer reading a stream (`wireshark -k -i -`) sees each frame as soon as it is written.
class PcapngWriter {
 public:
  // The section header block: `application` (shb_userappl) and a comment.
  static void section(std::vector<uint8_t>& out, const std::string& application,
                      const std::string& comment);
  // An interface description block: Ethernet, nanosecond timestamps (if_tsresol 9).
  static void interface(std::vector<uint8_t>& out, const PcapngInterface& i);
  // An enhanced packet block on interface `iface` (its index in the order described).
  static void packet(std::vector<uint8_t>& out, uint32_t iface, uint64_t ts_ns,
                     std::span<const uint8_t> data, uint32_t original_length, FrameDirection dir);
};

// The classic pcap format with nanosecond timestamps (magic 0xa1b23c4d): Ethernet, no
// interface names, no direction per frame; for tools that read nothing newer.
struct PcapWriter {
  static void header(std::vector<uint8_t>& out, uint32_t snaplen);
  static void record(std::vector<uint8_t>& out, uint64_t ts_ns, std::span<const uint8_t> data,
                     uint32_t original_length);
};

}  // namespace fabemu
