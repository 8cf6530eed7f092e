// `capture LAB LINK|NODE:PORT`: a port's frames as pcapng (or pcap) to a file or a pipe, or one
// line per frame on a terminal; timestamps in the real fabric's time.
#include <arpa/inet.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>

#include "cli/commands.h"
#include "report/pcapng.h"
#include "session/observe.h"

namespace fabemu::cli {
namespace {

// A capture file: pcapng (an interface per direction, the direction in each frame's flags) or
// classic pcap. The file is made when the capture has begun, so that a refused one (a bad
// target or filter) leaves no file and truncates none.
class FileSink : public session::CaptureSink {
 public:
  FileSink(std::string path, bool pcapng) : path_(std::move(path)), pcapng_(pcapng) {}
  ~FileSink() override {
    if (out_ && out_ != stdout) std::fclose(out_);
  }
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  std::string error;  // why the file could not be written

  bool begin(const session::CaptureTarget& t, const session::FabricClock& c) override {
    out_ = path_ == "-" ? stdout : std::fopen(path_.c_str(), "wb");
    if (!out_) {
      error = "-w " + path_ + ": " + std::strerror(errno);
      return false;
    }
    std::vector<uint8_t> b;
    if (!pcapng_) {
      PcapWriter::header(b, t.interfaces.front().snaplen);
      return write(b);
    }
    PcapngWriter::section(b, "fabemu " FABEMU_VERSION,
                          c.wall || c.factor == 1
                              ? "wall-clock timestamps"
                              : "timestamps in the real fabric's time: the lab's epoch plus the "
                                "wall time since it divided by the time scale x" +
                                    format_factor(c.factor));
    for (const PcapngInterface& i : t.interfaces) PcapngWriter::interface(b, i);
    return write(b);
  }
  bool frame(uint32_t iface, uint64_t ts, std::span<const uint8_t> data, uint32_t len) override {
    buf_.clear();
    if (pcapng_)
      PcapngWriter::packet(buf_, iface, ts, data, len,
                           iface == 0 ? FrameDirection::Outbound : FrameDirection::Inbound);
    else
      PcapWriter::record(buf_, ts, data, len);
    return write(buf_);
  }

 private:
  bool write(const std::vector<uint8_t>& b) {
    return std::fwrite(b.data(), 1, b.size(), out_) == b.size() && std::fflush(out_) == 0;
  }
  std::string path_;
  bool pcapng_;
  FILE* out_ = nullptr;
  std::vector<uint8_t> buf_;
};

// One line per frame, as tcpdump would say it briefly.
std::string frame_summary(std::span<const uint8_t> f) {
  if (f.size() < 14) return "runt";
  const uint16_t type = uint16_t(f[12] << 8 | f[13]);
  if (type == 0x0806) return "ARP";
  if (type != 0x0800 || f.size() < 34) return printf_string("ethertype 0x%04x", type);
  const uint8_t* ip = f.data() + 14;
  const size_t ihl = size_t(ip[0] & 0xf) * 4;
  char src[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, ip + 12, src, sizeof src);
  inet_ntop(AF_INET, ip + 16, dst, sizeof dst);
  const uint8_t proto = ip[9];
  const char* ecn[] = {"", " ECT(1)", " ECT(0)", " CE"};
  const std::string tos = ecn[ip[1] & 3];
  const uint8_t* l4 = ip + ihl;
  if ((proto != 6 && proto != 17) || f.size() < 14 + ihl + 8)
    return printf_string("%s > %s proto %u%s", src, dst, proto, tos.c_str());
  const unsigned sport = l4[0] << 8 | l4[1], dport = l4[2] << 8 | l4[3];
  std::string what = proto == 6 ? "TCP" : "UDP";
  // RoCEv2: the BTH after UDP's header (opcode, destination QP, PSN).
  if (proto == 17 && dport == 4791 && f.size() >= 14 + ihl + 8 + 12) {
    const uint8_t* bth = l4 + 8;
    what = printf_string("RoCEv2 opcode 0x%02x qp %u psn %u", bth[0],
                         unsigned(bth[5] << 16 | bth[6] << 8 | bth[7]),
                         unsigned(bth[9] << 16 | bth[10] << 8 | bth[11]));
  }
  return printf_string("%s.%u > %s.%u %s%s", src, sport, dst, dport, what.c_str(), tos.c_str());
}

class TextSink : public session::CaptureSink {
 public:
  bool begin(const session::CaptureTarget& t, const session::FabricClock& c) override {
    names_.clear();
    for (const PcapngInterface& i : t.interfaces) names_.push_back(i.description);
    std::fprintf(stderr, "capturing %s%s; ^C stops\n", names_.front().c_str(),
                 names_.size() > 1 ? (" and " + names_[1]).c_str() : "");
    std::fprintf(stderr, "times: %s\n",
                 c.wall || c.factor == 1 ? "wall clock, since the first frame"
                                         : ("the real fabric's, since the first frame (x" +
                                            format_factor(c.factor) + " dilated)")
                                               .c_str());
    return true;
  }
  bool frame(uint32_t iface, uint64_t ts, std::span<const uint8_t> data, uint32_t len) override {
    if (!first_) first_ = ts;
    const std::string& name = names_[iface];
    std::printf("%.9f %-16s %5u %s\n", double(ts - *first_) / 1e9,
                name.substr(0, name.find(' ')).c_str(), len, frame_summary(data).c_str());
    return std::fflush(stdout) == 0;
  }

 private:
  std::vector<std::string> names_;
  std::optional<uint64_t> first_;
};

struct CaptureArgs {
  std::string lab, target, file, format = "pcapng", filter;
  uint64_t count = 0;
  double seconds = 0;
  uint32_t snaplen = 262144;
  bool wall = false;
};

int cmd_capture(const CaptureArgs& a, const LabPaths& base) {
  // A reader that goes away (Wireshark closed) ends the capture, not the process.
  std::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<session::CaptureSink> sink;
  FileSink* file = nullptr;
  if (!a.file.empty()) {
    auto f = std::make_unique<FileSink>(a.file, a.format == "pcapng");
    file = f.get();
    sink = std::move(f);
  } else {
    sink = std::make_unique<TextSink>();
  }
  session::InterruptGuard guard;
  session::CaptureRequest req{a.lab, a.target, {a.filter, a.snaplen, a.count, a.seconds}, a.wall};
  auto stats = session::capture(req, base, *sink, &session::InterruptGuard::signal());
  if (!stats) return report_error(stats.error());
  if (file && !file->error.empty())
    return report_error(session::with_failure(make_error(file->error), session::Failure::BadInput));
  sink.reset();  // the file closed before the count is told
  std::fprintf(stderr, "%llu frames captured, %llu dropped by the kernel\n",
               static_cast<unsigned long long>(stats->frames),
               static_cast<unsigned long long>(stats->kernel_dropped));
  return kExitOk;
}

}  // namespace

void add_capture_command(CLI::App& app, CommandLine& cl) {
  auto a = std::make_shared<CaptureArgs>();
  auto* cmd = app.add_subcommand(
      "capture",
      "Capture a link's or a port's frames (libpcap inside the node's namespace), timestamped in "
      "the real fabric's time: pcapng for Wireshark, or one line per frame");
  cmd->add_option("lab", a->lab, "Lab name")->required();
  cmd->add_option("target", a->target,
                  "a:b (the link, at a's port, both directions), a>b (one direction) or "
                  "NODE:IFNAME (a port)")
      ->required();
  cmd->add_option("-w", a->file,
                  "Write the frames to this file ('-': stdout, e.g. | wireshark -k -i -); "
                  "without it, one line per frame");
  cmd->add_option("--format", a->format,
                  "pcapng (an interface per direction, named) or pcap (nanosecond timestamps, no "
                  "names)")
      ->capture_default_str()
      ->check(CLI::IsMember({"pcapng", "pcap"}));
  cmd->add_option("-c,--count", a->count, "Stop after this many frames");
  cmd->add_option("--seconds", a->seconds, "Stop after this many seconds of wall clock")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--filter", a->filter, "A capture filter in libpcap's syntax (as tcpdump's)");
  cmd->add_option("--snaplen", a->snaplen, "Bytes kept of each frame")
      ->capture_default_str()
      ->check(CLI::Range(64u, 262144u));
  cmd->add_flag("--wall", a->wall,
                "Timestamps as the kernel stamped them (wall clock), not the real fabric's time");
  cmd->callback([a, &cl] { cl.exit = cmd_capture(*a, cl.base); });
}

}  // namespace fabemu::cli
