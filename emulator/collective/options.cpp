// Command-line parsing (CLI11) and environment resolution for fabemu-collective.
#include "collective/options.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>

#include <CLI/CLI.hpp>

#include "util/files.h"
#include "util/units.h"

namespace fabemu::collective {
namespace {

template <typename Enum>
Result<Enum> parse_choice(std::string_view flag, const std::string& text,
                          const std::map<std::string, Enum>& choices) {
  auto it = choices.find(text);
  if (it != choices.end()) return it->second;
  std::string valid;
  for (const auto& [name, value] : choices) valid += (valid.empty() ? "" : ", ") + name;
  return make_error(std::string(flag) + ": unknown value '" + text + "'; valid: " + valid);
}

Result<int> parse_int(std::string_view what, std::string_view text, int min) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min) {
    return make_error(std::string(what) + ": '" + std::string(text) +
                      "' is not an integer >= " + std::to_string(min));
  }
  return v;
}

std::string env_or(const EnvLookup& env, const std::string& name) {
  auto v = env(name);
  return v ? *v : "";
}

// NCCL_IB_HCA as NCCL spells it: "mlx5_0:1,mlx5_1" or "=rxe0" (exact); the first device is
// the one Gloo gets. "^dev" excludes devices, which says nothing about which to use.
Result<void> apply_ib_hca(std::string spec, GlooSettings& s, std::string_view origin) {
  if (!spec.empty() && spec[0] == '^') {
    return make_error(std::string(origin) + "='" + spec +
                      "' only excludes devices; name one with --ib-dev DEV[:PORT]");
  }
  if (!spec.empty() && spec[0] == '=') spec.erase(0, 1);
  spec = spec.substr(0, spec.find(','));
  auto colon = spec.find(':');
  if (colon != std::string::npos) {
    auto port = parse_int(std::string(origin) + " port", spec.substr(colon + 1), 1);
    if (!port) return port.error();
    s.ib_port = *port;
    spec.erase(colon);
  }
  s.ib_dev = spec;
  return ok();
}

}  // namespace

std::string_view name_of(Library l) {
  return l == Library::Gloo ? "gloo" : "mpi";
}

std::string_view name_of(Transport t) {
  return t == Transport::Tcp ? "tcp" : "ibverbs";
}

std::string_view name_of(AllreduceAlgorithm a) {
  switch (a) {
    case AllreduceAlgorithm::RingChunked:
      return "ring_chunked";
    case AllreduceAlgorithm::Ring:
      return "ring";
    case AllreduceAlgorithm::HalvingDoubling:
      return "halving_doubling";
  }
  return "?";
}

Result<std::vector<uint64_t>> parse_size_list(std::string_view text) {
  std::vector<uint64_t> sizes;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma - start);
    auto size = parse_size_bytes(item);
    if (!size) return size.error().context("--sizes");
    if (*size == 0 || *size > kMaxSize) {
      return make_error("--sizes: '" + std::string(item) + "' is outside 1..1G bytes");
    }
    sizes.push_back(*size);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return sizes;
}

Result<Options> parse_options(int argc, const char* const* argv, std::string* help_text) {
  Options o;
  CLI::App app{
      "fabemu-collective: collective benchmark, one rank per emulated host; checks every "
      "output element of every iteration.\n"
      "Gloo ranks come from RANK and WORLD_SIZE and meet in a file store; with --library mpi, "
      "launch under mpirun.\n"
      "Exit codes: 0 ok, 1 wrong values, 2 bad usage or environment, 3 runtime failure."};
  std::string library = "gloo", transport = "tcp", collectives = "allreduce", sizes = "64K,1M,16M",
              allreduce = "ring_chunked", sync_max = "64K";
  app.add_option("--library", library, "gloo or mpi")->capture_default_str();
  auto* transport_opt = app.add_option("--transport", transport, "Gloo transport: tcp or ibverbs")
                            ->capture_default_str();
  app.add_option("--collective", collectives,
                 std::string(collective_names()) + "; a comma list runs several")
      ->capture_default_str();
  app.add_option("--sizes", sizes,
                 "Comma list of sizes in bytes; K, M, G are powers of 1024 (1M = 1048576), as "
                 "in nccl-tests. Size is nccl-tests' size column: allgather's output, "
                 "reducescatter's input, alltoall's send buffer")
      ->capture_default_str();
  app.add_option("--iterations,-n", o.iterations, "Timed iterations per size")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup,-w", o.warmup, "Untimed (but checked) iterations first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--timeout", o.timeout_s,
                 "Seconds any connect or transfer may take before the run fails")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--time-scale", o.time_scale,
                 "The lab runs N times slower than the real fabric (time dilation): report "
                 "times and bandwidths of the real fabric (default $FABEMU_TIME_SCALE, else 1)")
      ->check(CLI::Range(1.0, 1e6));
  app.add_option("--gloo-allreduce", allreduce,
                 "Gloo allreduce algorithm: ring_chunked, ring, halving_doubling")
      ->capture_default_str();
  app.add_option("--gloo-sync-max", sync_max,
                 "tcp: allreduces up to this size run over Gloo pairs in sync mode (the waiting "
                 "rank reads its socket itself: a hand-off less per message); 0 never. At most "
                 "64K, where a pair's bytes always fit the sockets' buffers")
      ->capture_default_str();
  app.add_option("--qps-per-peer", o.qps_per_peer,
                 "Gloo: connections (tcp) or queue pairs (ibverbs) per peer, each collective's "
                 "buffer split across them and run at once (allreduce, alltoall, broadcast)")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxQpsPerPeer));
  app.add_option("--store", o.store,
                 "Gloo rendezvous directory every rank sees (default $FABEMU_SHARED_DIR/gloo)");
  app.add_option("--run-id", o.run_id,
                 "Same on every rank, new for every run (default $FABEMU_RUN_ID)");
  app.add_option("--addr", o.addr, "tcp: address to bind (default $FABEMU_ADDR)");
  app.add_option("--iface", o.iface,
                 "tcp: interface to bind when there is no address (default $GLOO_SOCKET_IFNAME)");
  app.add_option("--ib-dev", o.ib_dev,
                 "ibverbs: device[:port] (default $NCCL_IB_HCA, else the only device)");
  app.add_option("--gid-index", o.gid_index,
                 "ibverbs: GID index (default $NCCL_IB_GID_INDEX, else 1: soft-RoCE's RoCEv2 "
                 "IPv4 GID)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--json", o.json, "JSON lines instead of the table");
  app.add_option("--json-out", o.json_out, "Also write the JSON lines to this file (rank 0)");
  app.add_option("--predict", o.predict,
                 "Predicted times (JSON from the emulator's model); default $FABEMU_PREDICT "
                 "if that file exists");
  app.add_option("--replay", o.replay,
                 "Replay a training step instead: a SimAI workload file, or a Chakra trace's "
                 "PREFIX (PREFIX.<rank>.et); RANK is the workload's rank. --iterations "
                 "iterations after one checked warm-up");
  app.add_option("--format", o.replay_format, "--replay's format: simai or chakra")
      ->capture_default_str()
      ->check(CLI::IsMember({"simai", "chakra"}));
  app.add_option("--comm-groups", o.comm_groups,
                 "--format chakra: the process groups' JSON ({\"1\": [0, 1], ...})");
  app.add_option("--replay-out", o.replay_out,
                 "--replay: this rank's timeline, as JSON, to PREFIX.<rank>.json (default: none)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    o.help = true;
    if (help_text) *help_text = app.help();
    return o;
  } catch (const CLI::ParseError& e) {
    return make_error(e.what());
  }

  auto lib =
      parse_choice<Library>("--library", library, {{"gloo", Library::Gloo}, {"mpi", Library::Mpi}});
  if (!lib) return lib.error();
  o.library = *lib;
  auto tr = parse_choice<Transport>("--transport", transport,
                                    {{"tcp", Transport::Tcp}, {"ibverbs", Transport::Ibverbs}});
  if (!tr) return tr.error();
  o.transport = *tr;
  o.transport_given = transport_opt->count() > 0;
  auto algo =
      parse_choice<AllreduceAlgorithm>("--gloo-allreduce", allreduce,
                                       {{"ring_chunked", AllreduceAlgorithm::RingChunked},
                                        {"ring", AllreduceAlgorithm::Ring},
                                        {"halving_doubling", AllreduceAlgorithm::HalvingDoubling}});
  if (!algo) return algo.error();
  o.allreduce = *algo;
  auto sync = parse_size_bytes(sync_max);
  if (!sync || *sync > (64 << 10))
    return make_error("--gloo-sync-max " + sync_max + ": a size from 0 to 64K (" +
                      (sync ? "larger sizes could block every rank's write" : sync.error().what()) +
                      ")");
  o.gloo_sync_max = *sync;
  auto list = parse_collective_list(collectives);
  if (!list) return list.error().context("--collective");
  o.collectives = std::move(*list);
  auto size_list = parse_size_list(sizes);
  if (!size_list) return size_list.error();
  o.sizes = std::move(*size_list);
  if (o.library == Library::Mpi && o.transport_given) {
    return make_error("--transport is for --library gloo; MPI picks its own (e.g. OMPI_MCA_btl)");
  }
  if (o.qps_per_peer > 1) {
    if (o.library == Library::Mpi)
      return make_error("--qps-per-peer is for --library gloo (MPI opens its own connections)");
    for (Collective c : o.collectives)
      if (!splits_across_qps(c))
        return make_error("--qps-per-peer " + std::to_string(o.qps_per_peer) + ": " +
                          std::string(name_of(c)) +
                          " cannot split its blocks across connections (Gloo's ring takes them "
                          "whole); allreduce, alltoall and broadcast can");
  }
  return o;
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

Result<RankInfo> ranks_from_env(const EnvLookup& env) {
  auto rank = env("RANK");
  auto size = env("WORLD_SIZE");
  if (!rank || !size) {
    return make_error(
        "RANK and WORLD_SIZE must be set (fabemu exec --all and fabemu run set them in every "
        "host); for MPI, launch with mpirun and pass --library mpi");
  }
  auto s = parse_int("WORLD_SIZE", *size, 1);
  if (!s) return s.error();
  auto r = parse_int("RANK", *rank, 0);
  if (!r) return r.error();
  if (*r >= *s) {
    return make_error("RANK " + *rank + " is not below WORLD_SIZE " + *size);
  }
  return RankInfo{*r, *s};
}

Result<GlooSettings> gloo_settings(const Options& o, const EnvLookup& env) {
  GlooSettings s;
  s.transport = o.transport;
  s.allreduce = o.allreduce;
  const bool allreduce = std::find(o.collectives.begin(), o.collectives.end(),
                                   Collective::AllReduce) != o.collectives.end();
  const bool small =
      std::any_of(o.sizes.begin(), o.sizes.end(), [&](uint64_t b) { return b <= o.gloo_sync_max; });
  // The sync pairs are a second mesh of one connection per peer: not with several.
  if (o.transport == Transport::Tcp && allreduce && small && o.qps_per_peer == 1)
    s.sync_max = o.gloo_sync_max;
  s.qps_per_peer = o.qps_per_peer;
  s.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));

  s.store_dir = o.store;
  if (s.store_dir.empty()) {
    std::string shared = env_or(env, "FABEMU_SHARED_DIR");
    if (shared.empty()) {
      return make_error(
          "no rendezvous directory: pass --store DIR (one directory every rank sees) or set "
          "FABEMU_SHARED_DIR (the emulator sets it in every host)");
    }
    s.store_dir = shared + "/gloo";
  }
  s.run_id = o.run_id.empty() ? env_or(env, "FABEMU_RUN_ID") : o.run_id;
  if (s.run_id.empty()) {
    return make_error(
        "no run id: pass --run-id ID or set FABEMU_RUN_ID. Every rank of a run needs the same "
        "id and every run a new one: the file store never deletes keys, so a reused id finds "
        "the old run's addresses");
  }

  if (o.transport == Transport::Tcp) {
    if (!o.addr.empty()) {
      s.addr = o.addr;
    } else if (!o.iface.empty()) {
      s.iface = o.iface;
    } else if (auto addr = env_or(env, "FABEMU_ADDR"); !addr.empty()) {
      s.addr = addr;
    } else {
      s.iface = env_or(env, "GLOO_SOCKET_IFNAME");
    }
    if (s.addr.empty() && s.iface.empty()) {
      return make_error(
          "no address to bind: pass --addr or --iface, or set FABEMU_ADDR or GLOO_SOCKET_IFNAME "
          "(the emulator sets both). Otherwise Gloo binds to what the hostname resolves to, "
          "often 127.0.0.1, and the ranks never connect");
    }
  } else {
    std::string hca = o.ib_dev.empty() ? env_or(env, "NCCL_IB_HCA") : o.ib_dev;
    FABEMU_TRY(apply_ib_hca(hca, s, o.ib_dev.empty() ? "NCCL_IB_HCA" : "--ib-dev"));
    if (o.gid_index >= 0) {
      s.gid_index = o.gid_index;
    } else if (auto gid = env_or(env, "NCCL_IB_GID_INDEX"); !gid.empty()) {
      auto index = parse_int("NCCL_IB_GID_INDEX", gid, 0);
      if (!index) return index.error();
      s.gid_index = *index;
    }
  }
  return s;
}

std::string prediction_path(const Options& o, const EnvLookup& env) {
  if (!o.predict.empty()) return o.predict;
  std::string path = env_or(env, "FABEMU_PREDICT");
  return !path.empty() && path_exists(path) ? path : "";
}

double clock_scale(const EnvLookup& env, double time_scale) {
  const auto preload = env("LD_PRELOAD");
  const bool fabric_clock =
      env("FAKETIME").has_value() && preload && preload->find("libfaketime") != std::string::npos;
  return fabric_clock ? 1 : time_scale;
}

}  // namespace fabemu::collective
