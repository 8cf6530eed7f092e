// pcapng blocks in the writer's byte order (the section's byte-order magic tells readers which).
#include "report/pcapng.h"

#include <cstring>

namespace fabemu {
namespace {

constexpr uint32_t kSectionHeader = 0x0A0D0D0A, kInterface = 1, kEnhancedPacket = 6;
constexpr uint16_t kLinkEthernet = 1;  // LINKTYPE_ETHERNET
// Option codes (the draft's tables).
constexpr uint16_t kEndOfOpt = 0, kComment = 1, kShbUserAppl = 4, kIfName = 2, kIfDescription = 3,
                   kIfTsresol = 9, kIfFilter = 11, kEpbFlags = 2;

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.insert(out.end(), b, b + sizeof v);
}

void pad(std::vector<uint8_t>& out) {
  while (out.size() % 4) out.push_back(0);
}

void option(std::vector<uint8_t>& out, uint16_t code, std::span<const uint8_t> value) {
  put<uint16_t>(out, code);
  put<uint16_t>(out, static_cast<uint16_t>(value.size()));
  out.insert(out.end(), value.begin(), value.end());
  pad(out);
}

void option(std::vector<uint8_t>& out, uint16_t code, const std::string& text) {
  if (!text.empty())
    option(out, code, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

// A block: type, total length, body (padded), total length again.
class Block {
 public:
  Block(std::vector<uint8_t>& out, uint32_t type) : out_(out), start_(out.size()) {
    put(out_, type);
    put<uint32_t>(out_, 0);
  }
  ~Block() {
    pad(out_);
    const auto length = static_cast<uint32_t>(out_.size() - start_ + 4);
    std::memcpy(out_.data() + start_ + 4, &length, 4);
    put(out_, length);
  }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

 private:
  std::vector<uint8_t>& out_;
  size_t start_;
};

void end_of_options(std::vector<uint8_t>& out) {
  put<uint16_t>(out, kEndOfOpt);
  put<uint16_t>(out, 0);
}

}  // namespace

void PcapngWriter::section(std::vector<uint8_t>& out, const std::string& application,
                           const std::string& comment) {
  Block b(out, kSectionHeader);
  put<uint32_t>(out, 0x1A2B3C4D);  // byte-order magic
  put<uint16_t>(out, 1);           // version 1.0
  put<uint16_t>(out, 0);
  put<int64_t>(out, -1);  // section length: not given (a stream)
  option(out, kComment, comment);
  option(out, kShbUserAppl, application);
  end_of_options(out);
}

void PcapngWriter::interface(std::vector<uint8_t>& out, const PcapngInterface& i) {
  Block b(out, kInterface);
  put<uint16_t>(out, kLinkEthernet);
  put<uint16_t>(out, 0);
  put<uint32_t>(out, i.snaplen);
  option(out, kIfName, i.name);
  option(out, kIfDescription, i.description);
  const uint8_t nanoseconds = 9;
  option(out, kIfTsresol, std::span<const uint8_t>(&nanoseconds, 1));
  if (!i.filter.empty()) {
    // The first byte says the filter is a libpcap expression.
    std::vector<uint8_t> f{0};
    f.insert(f.end(), i.filter.begin(), i.filter.end());
    option(out, kIfFilter, f);
  }
  end_of_options(out);
}

void PcapngWriter::packet(std::vector<uint8_t>& out, uint32_t iface, uint64_t ts_ns,
                          std::span<const uint8_t> data, uint32_t original_length,
                          FrameDirection dir) {
  Block b(out, kEnhancedPacket);
  put(out, iface);
  put(out, static_cast<uint32_t>(ts_ns >> 32));
  put(out, static_cast<uint32_t>(ts_ns));
  put(out, static_cast<uint32_t>(data.size()));
  put(out, original_length);
  out.insert(out.end(), data.begin(), data.end());
  pad(out);
  if (dir != FrameDirection::Unknown) {
    const uint32_t flags = static_cast<uint32_t>(dir);  // bits 0-1: inbound 1, outbound 2
    uint8_t v[4];
    std::memcpy(v, &flags, 4);
    option(out, kEpbFlags, v);
  }
  end_of_options(out);
}

void PcapWriter::header(std::vector<uint8_t>& out, uint32_t snaplen) {
  put<uint32_t>(out, 0xa1b23c4d);  // nanosecond timestamps
  put<uint16_t>(out, 2);           // version 2.4
  put<uint16_t>(out, 4);
  put<int32_t>(out, 0);  // this zone
  put<uint32_t>(out, 0);
  put<uint32_t>(out, snaplen);
  put<uint32_t>(out, kLinkEthernet);
}

void PcapWriter::record(std::vector<uint8_t>& out, uint64_t ts_ns, std::span<const uint8_t> data,
                        uint32_t original_length) {
  put(out, static_cast<uint32_t>(ts_ns / 1'000'000'000));
  put(out, static_cast<uint32_t>(ts_ns % 1'000'000'000));
  put(out, static_cast<uint32_t>(data.size()));
  put(out, original_length);
  out.insert(out.end(), data.begin(), data.end());
}

}  // namespace fabemu
