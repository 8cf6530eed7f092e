// fabemu-collective: parses arguments, joins the other ranks (Gloo or MPI), runs the
// benchmark and prints rank 0's table or JSON lines; turns errors into exit codes.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collective/benchmark.h"
#include "collective/gloo_communicator.h"
#include "collective/mpi_communicator.h"
#include "collective/options.h"
#include "collective/prediction.h"
#include "collective/replay.h"
#include "collective/report.h"
#include "replay/chakra.h"
#include "replay/simai.h"
#include "util/files.h"

using namespace fabemu;
using namespace fabemu::collective;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitWrong = 1;    // some rank saw a wrong value
constexpr int kExitUsage = 2;    // bad arguments or environment
constexpr int kExitRuntime = 3;  // connecting, a transfer or a timeout failed

// "fabemu-collective: rank 3: ..." on stderr; every rank speaks for itself.
int complain(int rank, int code, const std::string& message) {
  std::string who = rank >= 0 ? "rank " + std::to_string(rank) + ": " : "";
  std::fprintf(stderr, "fabemu-collective: %s%s\n", who.c_str(), message.c_str());
  return code;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// What the run writes besides the benchmark itself.
struct Outputs {
  std::optional<Predictions> predictions;
  std::unique_ptr<std::FILE, FileCloser> json_out;  // rank 0 only
  int failure = kExitOk;                            // set when opening failed
  std::string error;
};

Outputs open_outputs(const Options& o, const EnvLookup& env, int rank) {
  Outputs out;
  if (std::string path = prediction_path(o, env); !path.empty()) {
    auto p = Predictions::load(path);
    if (!p) {
      out.failure = kExitUsage;
      out.error = p.error().what();
      return out;
    }
    out.predictions = std::move(*p);
  }
  if (rank == 0 && !o.json_out.empty()) {
    out.json_out.reset(std::fopen(o.json_out.c_str(), "w"));
    if (!out.json_out) {
      out.failure = kExitRuntime;
      out.error = errno_error("opening --json-out " + o.json_out).what();
    }
  }
  return out;
}

void print(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

std::string describe_wrong(const SizeResult& r) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "first in iteration %d at element %llu: got %.9g, expected %.9g",
                r.local_iteration, static_cast<unsigned long long>(r.local.first_index),
                static_cast<double>(r.local.got), static_cast<double>(r.local.expected));
  return std::string(name_of(r.layout.collective)) + " size " + std::to_string(r.layout.size) +
         ": " + std::to_string(r.local.wrong) + " wrong elements over " +
         std::to_string(r.warmup + r.iterations) + " iterations; " + buf;
}

// Every collective at every size; the exit code.
int run_benchmark(Communicator& comm, const Options& o, Outputs& outputs) {
  const int rank = comm.rank();
  const bool printer = rank == 0;
  const RunInfo run{comm.library(), comm.transport(), comm.size(), outputs.predictions.has_value(),
                    o.time_scale};
  auto emit_json = [&](const std::string& line) {
    if (o.json) print(line);
    if (outputs.json_out) {
      std::fputs(line.c_str(), outputs.json_out.get());
      std::fflush(outputs.json_out.get());
    }
  };

  std::vector<SizeResult> all;
  for (Collective c : o.collectives) {
    if (printer && !o.json) print(table_header(run, c, comm.algorithm(c)));
    std::vector<SizeResult> rows;
    for (uint64_t size : o.sizes) {
      auto r = run_size(comm, c, size,
                        BenchmarkConfig{o.iterations, o.warmup, o.time_scale,
                                        clock_scale(process_env(), o.time_scale)});
      if (!r) return complain(rank, kExitRuntime, r.error().what());
      if (outputs.predictions) {
        if (auto t = outputs.predictions->time_s(c, r->layout.size)) r->pred_time_us = *t * 1e6;
        r->pred_busbw = outputs.predictions->busbw(c, r->layout.size, comm.size());
      }
      if (r->local.wrong > 0) complain(rank, kExitWrong, describe_wrong(*r));
      if (printer) {
        if (!o.json) print(table_row(run, *r));
        emit_json(json_result(run, *r));
      }
      rows.push_back(std::move(*r));
    }
    if (printer && !o.json) print(table_footer(rows));
    all.insert(all.end(), rows.begin(), rows.end());
  }

  uint64_t wrong = 0;
  for (const auto& r : all) wrong += r.wrong;
  if (printer) {
    if (!o.json) print(verdict_line(all));
    emit_json(json_summary(run, all));
  }
  return wrong > 0 ? kExitWrong : kExitOk;
}

int run_gloo(const Options& o, const EnvLookup& env) {
  auto ranks = ranks_from_env(env);
  if (!ranks) return complain(-1, kExitUsage, ranks.error().what());
  const int rank = ranks->rank;
  auto settings = gloo_settings(o, env);
  if (!settings) return complain(rank, kExitUsage, settings.error().what());
  Outputs outputs = open_outputs(o, env, rank);
  if (outputs.failure) return complain(rank, outputs.failure, outputs.error);

  auto comm = GlooCommunicator::connect(*settings, *ranks);
  if (!comm) return complain(rank, kExitRuntime, comm.error().what());
  // Gloo's ibverbs buffers abort when destroyed with a send completion outstanding, and the
  // last barrier's are: give them time to land, then leave without destructors.
  auto finish = [&](int code) {
    if (settings->transport != Transport::Ibverbs) return code;
    std::fflush(nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::_Exit(code);
  };
  const int code = run_benchmark(**comm, o, outputs);
  if (code == kExitRuntime) return finish(code);
  // Everyone has connected (and so read every key) once all are here.
  if ((*comm)->barrier()) (*comm)->forget_rendezvous();
  return finish(code);
}

// --replay: this rank's part of a training step, on a Gloo communicator per group it is in.
int run_replay_rank(const Options& o, const EnvLookup& env) {
  auto ranks = ranks_from_env(env);
  if (!ranks) return complain(-1, kExitUsage, ranks.error().what());
  const int rank = ranks->rank;
  Result<replay::Program> program = make_error("");
  if (o.replay_format == "chakra") {
    program = replay::read_chakra(o.replay, o.comm_groups);
  } else if (auto text = read_file(o.replay); text) {
    program = replay::read_simai(*text, o.replay);
  } else {
    program = text.error();
  }
  if (!program) return complain(rank, kExitUsage, program.error().what());
  if (program->world != ranks->size)
    return complain(rank, kExitUsage,
                    o.replay + " has " + std::to_string(program->world) + " ranks, WORLD_SIZE is " +
                        std::to_string(ranks->size));
  auto settings = gloo_settings(o, env);
  if (!settings) return complain(rank, kExitUsage, settings.error().what());
  settings->sync_max = 0;
  auto world = GlooCommunicator::connect(*settings, *ranks);
  if (!world) return complain(rank, kExitRuntime, world.error().what());
  auto connect = [&](int g) -> Result<std::unique_ptr<Communicator>> {
    GlooSettings s = *settings;
    s.run_id += "-g" + std::to_string(g);
    const auto& members = program->groups[g].ranks;
    const int position =
        static_cast<int>(std::find(members.begin(), members.end(), rank) - members.begin());
    auto c = GlooCommunicator::connect(s, RankInfo{position, static_cast<int>(members.size())});
    if (!c) return c.error();
    return std::unique_ptr<Communicator>(std::move(*c));
  };
  auto record = run_replay(*program, rank, **world, connect,
                           ReplayConfig{o.iterations, clock_scale(env, o.time_scale)});
  auto finish = [&](int code) {
    if (settings->transport != Transport::Ibverbs) return code;
    std::fflush(nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::_Exit(code);
  };
  if (!record) return finish(complain(rank, kExitRuntime, record.error().what()));
  if (!o.replay_out.empty())
    if (auto w = write_file(o.replay_out + "." + std::to_string(rank) + ".json",
                            replay::record_json(*record));
        !w)
      return finish(complain(rank, kExitRuntime, w.error().what()));
  if (record->wrong)
    complain(rank, kExitWrong,
             std::to_string(record->wrong) + " wrong elements; first: " + record->first_wrong);
  (void)(*world)->barrier();
  return finish(record->wrong ? kExitWrong : kExitOk);
}

int run_mpi(const Options& o, const EnvLookup& env, int* argc, char*** argv) {
  if (!launched_by_mpi()) {
    return complain(-1, kExitUsage,
                    "--library mpi needs an MPI launcher: mpirun -np N fabemu-collective "
                    "--library mpi ...");
  }
  auto comm = MpiCommunicator::init(argc, argv);
  if (!comm) return complain(-1, kExitRuntime, comm.error().what());
  const int rank = (*comm)->rank();
  Outputs outputs = open_outputs(o, env, rank);
  if (outputs.failure) {
    complain(rank, outputs.failure, outputs.error);
    (*comm)->abort(outputs.failure);
  }
  const int code = run_benchmark(**comm, o, outputs);
  if (code == kExitRuntime) (*comm)->abort(code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // A peer that dies mid-transfer should be an error message, not a silent SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  std::string help;
  auto options = parse_options(argc, argv, &help);
  if (!options) {
    return complain(-1, kExitUsage, options.error().what() + " (see --help)");
  }
  if (options->help) {
    std::fputs(help.c_str(), stdout);
    return kExitOk;
  }
  const EnvLookup env = process_env();
  if (options->time_scale == 0) {
    // The emulator exports the lab's dilation to every rank.
    const auto given = env("FABEMU_TIME_SCALE");
    options->time_scale = given ? std::strtod(given->c_str(), nullptr) : 1;
    if (!(options->time_scale >= 1 && options->time_scale <= 1e6))
      return complain(-1, kExitUsage, "FABEMU_TIME_SCALE='" + *given + "' is not a number >= 1");
  }
  try {
    if (!options->replay.empty()) return run_replay_rank(*options, env);
    if (options->library == Library::Mpi) return run_mpi(*options, env, &argc, &argv);
    return run_gloo(*options, env);
  } catch (const std::exception& e) {
    return complain(-1, kExitRuntime, e.what());
  }
}
