// fabemu-collective's command line, and the settings it takes from the environment the
// emulator gives every host (RANK, WORLD_SIZE, FABEMU_SHARED_DIR, FABEMU_ADDR, ...).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "util/result.h"

namespace fabemu::collective {

enum class Library { Gloo, Mpi };
enum class Transport { Tcp, Ibverbs };
// Gloo's allreduce algorithm classes.
enum class AllreduceAlgorithm { RingChunked, Ring, HalvingDoubling };

std::string_view name_of(Library l);
std::string_view name_of(Transport t);
std::string_view name_of(AllreduceAlgorithm a);

struct Options {
  Library library = Library::Gloo;
  Transport transport = Transport::Tcp;
  bool transport_given = false;
  std::vector<Collective> collectives = {Collective::AllReduce};
  std::vector<uint64_t> sizes = {64 << 10, 1 << 20, 16 << 20};
  int iterations = 20;
  int warmup = 2;
  double timeout_s = 60;  // of wall clock
  // The lab runs this many times slower than the real fabric it emulates: times, algbw and
  // busbw are reported for the real fabric (wall time / N). Default $FABEMU_TIME_SCALE, else 1.
  double time_scale = 0;  // 0: not given
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::RingChunked;
  // Gloo tcp allreduces of at most this many bytes run over pairs in sync mode (0: none).
  uint64_t gloo_sync_max = 64 << 10;
  // Gloo: connections (tcp) or queue pairs (ibverbs) per peer, each collective's buffer split
  // across them and the parts run at once (Meta's QP scaling: more flows for ECMP to spread).
  int qps_per_peer = 1;
  std::string store;   // "" = $FABEMU_SHARED_DIR/gloo
  std::string run_id;  // "" = $FABEMU_RUN_ID
  std::string addr;    // "" = $FABEMU_ADDR
  std::string iface;   // "" = $GLOO_SOCKET_IFNAME
  std::string ib_dev;  // "" = $NCCL_IB_HCA
  int gid_index = -1;  // -1 = $NCCL_IB_GID_INDEX, else 1
  bool json = false;
  std::string json_out;  // "" = none
  std::string predict;   // "" = $FABEMU_PREDICT when that file exists
  bool help = false;     // usage was asked for (and is in the help text)
  // --replay: a training step's operations instead of the benchmark (replay/program.h); this
  // rank's timeline goes to replay_out.
  std::string replay;
  std::string replay_format = "simai";
  std::string comm_groups;
  std::string replay_out;
};

// The largest size: Gloo's algorithm classes count bytes in an int.
constexpr uint64_t kMaxSize = uint64_t{1} << 30;

// Parses the command line. Errors are usage errors (exit 2); with --help, `help` is set and
// the usage is in *help_text.
Result<Options> parse_options(int argc, const char* const* argv, std::string* help_text);

// Sizes in bytes, binary suffixes like nccl-tests: "64K,1M,16M" = 65536, 1048576, 16777216.
Result<std::vector<uint64_t>> parse_size_list(std::string_view text);

// Environment access, replaceable in tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_env();

struct RankInfo {
  int rank = 0;
  int size = 1;
};

// RANK and WORLD_SIZE, as the emulator (and torchrun) set them.
Result<RankInfo> ranks_from_env(const EnvLookup& env);

struct GlooSettings {
  Transport transport = Transport::Tcp;
  std::string store_dir;  // FileStore directory shared by all ranks
  std::string run_id;     // PrefixStore prefix: the same on all ranks, new for every run
  // tcp: the device binds to `addr` when set, else to the address of `iface`.
  std::string addr;
  std::string iface;
  // ibverbs: "" = the only device there is.
  std::string ib_dev;
  int ib_port = 1;
  int gid_index = 1;  // 1 = soft-RoCE's RoCEv2 GID for the netdev's IPv4 address
  std::chrono::milliseconds timeout{60000};
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::RingChunked;
  // tcp: allreduces of at most this many bytes run over a second set of pairs in Gloo's sync
  // mode, where the waiting rank reads its socket itself instead of being woken by Gloo's
  // device thread (one hand-off less per message: ~0.2 ms a ring step instead of ~0.85 ms with
  // 8 ranks on 2 CPUs). 0 when no allreduce of the run is that small (no second mesh). Sync
  // writes block until the data is in the socket, so only sizes whose every pair's bytes of an
  // iteration fit the sockets' buffers (well under 208 KB: wmem_max, and 128 KB of receive
  // buffer) are safe: a ring where every rank writes first could otherwise wait for ever.
  uint64_t sync_max = 0;
  // Connections or queue pairs per peer (Options::qps_per_peer): one full mesh each.
  int qps_per_peer = 1;
};

// Command line first, then the environment. Errors are usage errors (exit 2).
Result<GlooSettings> gloo_settings(const Options& o, const EnvLookup& env);

// How many of this process's clock seconds one real second of the lab's fabric lasts: the lab's
// `time_scale` on the machine's clock; 1 when the process itself runs on the fabric's clock
// (`hosts: {clock: fabric}` preloads libfaketime and sets FAKETIME), whose readings are the real
// fabric's already and must not be divided again.
double clock_scale(const EnvLookup& env, double time_scale);

// The prediction file: --predict, else $FABEMU_PREDICT if that file exists; "" for none.
std::string prediction_path(const Options& o, const EnvLookup& env);

}  // namespace fabemu::collective
