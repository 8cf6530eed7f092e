// A rank's streams on threads, operations prepared once on per-stream buffers.
#include "collective/replay.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "collective/pattern.h"

namespace fabemu::collective {
namespace {

using replay::Op;
using replay::OpKind;
using replay::Program;
using Clock = std::chrono::steady_clock;

int64_t realtime_now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// A collective or a send as its group's communicator runs it: a send/receive pair is a
// broadcast from the pair's first rank (the sender) to the second.
struct Prepared {
  Layout layout;
  Communicator* comm = nullptr;
  bool in_place = false;
  std::span<float> in, out;
  std::unique_ptr<Operation> op;  // none for a group of one: nothing moves
};

struct Stream {
  std::vector<size_t> ops;
  std::vector<float> in, out;
};

Collective collective_of(const Op& op) {
  return op.kind == OpKind::Collective ? op.collective : Collective::Broadcast;
}

// Where each operation waits: its dependencies' completion, per iteration.
class Completion {
 public:
  explicit Completion(size_t n) : done_(n, false) {}
  void reset() {
    std::lock_guard lock(mu_);
    std::fill(done_.begin(), done_.end(), false);
    failed_ = false;
  }
  void finish(size_t i, bool ok) {
    {
      std::lock_guard lock(mu_);
      done_[i] = true;
      failed_ = failed_ || !ok;
    }
    cv_.notify_all();
  }
  // False once any operation failed (the others stop waiting).
  bool wait(const std::vector<size_t>& deps) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] {
      return failed_ || std::all_of(deps.begin(), deps.end(), [&](size_t d) { return done_[d]; });
    });
    return !failed_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> done_;
  bool failed_ = false;
};

// This rank's streams, their buffers (the largest input and output among their operations) and
// each operation prepared once on them; the same collective and size share one.
struct RankStreams {
  std::map<int, Stream> streams;
  std::map<std::tuple<int, Collective, uint64_t>, Prepared> shared;
  std::vector<Prepared*> prepared;  // per operation; none for compute
};

Result<void> prepare_streams(const Program& p, const std::vector<Op>& ops,
                             const std::map<int, std::unique_ptr<Communicator>>& comms,
                             RankStreams& rs) {
  auto& streams = rs.streams;
  auto& shared = rs.shared;
  auto& prepared = rs.prepared;
  for (size_t i = 0; i < ops.size(); ++i) streams[Program::stream_of(ops[i])].ops.push_back(i);
  prepared.assign(ops.size(), nullptr);
  for (auto& [id, s] : streams) {
    if (id == 0) continue;
    uint64_t in = 0, out = 0;
    std::vector<Prepared*> mine;
    for (size_t i : s.ops) {
      const Op& op = ops[i];
      const int size = static_cast<int>(p.groups[op.group].ranks.size());
      Prepared& pr = shared[{op.group, collective_of(op), op.bytes}];
      prepared[i] = &pr;
      if (pr.layout.size) continue;
      pr.layout = layout_of(collective_of(op), op.bytes, size);
      if (size > 1) pr.comm = comms.at(op.group).get();
      pr.in_place = pr.comm && pr.comm->in_place(pr.layout.collective);
      in = std::max(in, pr.in_place ? 0 : pr.layout.in_count);
      out = std::max(out, pr.in_place ? std::max(pr.layout.in_count, pr.layout.out_count)
                                      : pr.layout.out_count);
      mine.push_back(&pr);
    }
    s.in.resize(in);
    s.out.resize(out);
    for (Prepared* pr : mine) {
      pr->in = std::span<float>(s.in).first(pr->in_place ? 0 : pr->layout.in_count);
      pr->out = std::span<float>(s.out).first(
          pr->in_place ? std::max(pr->layout.in_count, pr->layout.out_count)
                       : pr->layout.out_count);
      if (!pr->comm) continue;
      auto op = pr->comm->prepare(pr->layout, pr->in, pr->out);
      if (!op) return op.error().context(std::string(name_of(pr->layout.collective)));
      pr->op = std::move(*op);
    }
  }
  return ok();
}

}  // namespace

Result<replay::RankRecord> run_replay(const Program& p, int rank, Communicator& world,
                                      const GroupConnector& connect, const ReplayConfig& config) {
  const auto& ops = p.ranks.at(rank);
  // This rank's communicators, in group order (every rank connects its groups in the same
  // order, so nobody waits for a group whose members are all waiting for another).
  std::map<int, std::unique_ptr<Communicator>> comms;
  for (const Op& op : ops)
    if (op.kind != OpKind::Compute && p.groups[op.group].ranks.size() > 1) comms[op.group];
  for (auto& [g, comm] : comms) {
    auto c = connect(g);
    if (!c) return c.error().context("connecting group " + p.groups[g].kind);
    comm = std::move(*c);
  }
  RankStreams rs;
  FABEMU_TRY(prepare_streams(p, ops, comms, rs));
  const auto& streams = rs.streams;
  const auto& prepared = rs.prepared;

  // Each operation's place in its group (a pair's sender is 0, the broadcast's root) and its
  // instance there: what the data pattern of the check is made of, the same on every member.
  std::vector<int> position(ops.size(), 0);
  std::vector<uint32_t> instance(ops.size(), 0);
  std::map<int, uint32_t> issued;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == OpKind::Compute) continue;
    const auto& members = p.groups[ops[i].group].ranks;
    position[i] =
        static_cast<int>(std::find(members.begin(), members.end(), rank) - members.begin());
    instance[i] = issued[ops[i].group]++;
  }

  replay::RankRecord record;
  record.rank = rank;
  Completion completion(ops.size());
  std::mutex mu;
  std::string error;
  for (int it = 0; it <= config.iterations; ++it) {
    const bool check = it == 0;
    completion.reset();
    FABEMU_TRY(world.barrier());
    const auto t0 = Clock::now();
    const int64_t start_ns = realtime_now_ns();
    std::vector<replay::Span> spans(ops.size());
    auto ns_since = [&](Clock::time_point t) {
      return static_cast<int64_t>(std::chrono::duration<double, std::nano>(t - t0).count() /
                                  config.clock_scale);
    };
    auto run_stream = [&](const Stream& s) {
      for (size_t i : s.ops) {
        const Op& op = ops[i];
        if (!completion.wait(op.deps)) return;
        Prepared* pr = prepared[i];
        // The warm-up checks: fill before, verify after (neither inside the measured span).
        const int member = position[i];
        const uint32_t tag = instance[i];
        if (check && pr && pr->comm) {
          fill_input(pr->layout, member, tag, pr->in_place ? pr->out : pr->in);
          if (!pr->in_place) poison(pr->out);
        }
        const auto begin = Clock::now();
        Result<void> ran = ok();
        if (op.kind == OpKind::Compute) {
          std::this_thread::sleep_until(
              begin + std::chrono::nanoseconds(static_cast<int64_t>(
                          static_cast<double>(op.compute_ns) * config.clock_scale)));
        } else if (pr->op) {
          ran = pr->op->run();
        }
        spans[i] = {ns_since(begin), ns_since(Clock::now())};
        if (ran && check && pr && pr->comm) {
          const Verification v = verify_output(pr->layout, member, tag, pr->out);
          std::lock_guard lock(mu);
          record.checked += pr->layout.out_count;
          if (v.wrong && !record.wrong)
            record.first_wrong = describe_op(p, op) + " (" + op.layer + "): element " +
                                 std::to_string(v.first_index) + " got " + std::to_string(v.got) +
                                 ", expected " + std::to_string(v.expected);
          record.wrong += v.wrong;
        }
        if (!ran) {
          std::lock_guard lock(mu);
          if (error.empty())
            error = describe_op(p, op) + " (" + op.layer + "): " + ran.error().what();
        }
        completion.finish(i, static_cast<bool>(ran));
        if (!ran) return;
      }
    };
    std::vector<std::thread> threads;
    for (const auto& [id, s] : streams) threads.emplace_back(run_stream, std::cref(s));
    for (std::thread& t : threads) t.join();
    if (!error.empty())
      return make_error((check ? "warm-up: " : "iteration " + std::to_string(it) + ": ") + error);
    if (check) continue;
    record.start_ns.push_back(
        static_cast<int64_t>(static_cast<double>(start_ns) / config.clock_scale));
    record.ops.push_back(std::move(spans));
  }
  // Nobody closes its connections while a peer may still be reading from them.
  FABEMU_TRY(world.barrier());
  return record;
}

}  // namespace fabemu::collective
