// Gloo backend: rendezvous, device, and one Gloo algorithm object per collective and size.
#include "collective/gloo_communicator.h"

#include <unistd.h>

#include <cstring>
#include <thread>

#include <gloo/allgather_ring.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "collective/gloo_alltoall.h"
#include "collective/ibverbs_device.h"
#include "util/files.h"

namespace fabemu::collective {
namespace {

// Gloo reports failures (timeouts, closed connections) as exceptions; the benchmark wants
// values.
class AlgorithmOperation final : public Operation {
 public:
  AlgorithmOperation(std::unique_ptr<gloo::Algorithm> algorithm,
                     std::vector<std::unique_ptr<gloo::Algorithm>>& retired)
      : algorithm_(std::move(algorithm)), retired_(retired) {}
  ~AlgorithmOperation() override { retired_.push_back(std::move(algorithm_)); }
  Result<void> run() override {
    try {
      algorithm_->run();
      return ok();
    } catch (const std::exception& e) {
      return make_error(e.what());
    }
  }

 private:
  std::unique_ptr<gloo::Algorithm> algorithm_;
  std::vector<std::unique_ptr<gloo::Algorithm>>& retired_;
};

// One rank: there is nobody to talk to (and AllgatherRing would look for a pair to itself).
class LocalCopy final : public Operation {
 public:
  LocalCopy(std::span<const float> in, std::span<float> out) : in_(in), out_(out) {}
  Result<void> run() override {
    if (!in_.empty()) std::memcpy(out_.data(), in_.data(), in_.size_bytes());
    return ok();
  }

 private:
  std::span<const float> in_;
  std::span<float> out_;
};

// One collective split over several connections per peer: each lane's algorithm on its own
// slice, all at once (the first lane in the calling thread).
class LanesOperation final : public Operation {
 public:
  explicit LanesOperation(std::vector<std::unique_ptr<Operation>> lanes)
      : lanes_(std::move(lanes)) {}
  Result<void> run() override {
    std::vector<Result<void>> got(lanes_.size(), ok());
    std::vector<std::thread> threads;
    for (size_t k = 1; k < lanes_.size(); ++k)
      threads.emplace_back([this, k, &got] { got[k] = lanes_[k]->run(); });
    got[0] = lanes_[0]->run();
    for (std::thread& t : threads) t.join();
    for (size_t k = 0; k < got.size(); ++k)
      if (!got[k]) return got[k].error().context("connection " + std::to_string(k + 1));
    return ok();
  }

 private:
  std::vector<std::unique_ptr<Operation>> lanes_;
};

// Part k of n of `total` elements: [first, first + count), the remainder spread over the first.
std::pair<size_t, size_t> part(size_t total, size_t n, size_t k) {
  const size_t base = total / n, extra = total % n;
  return {k * base + std::min(k, extra), base + (k < extra ? 1 : 0)};
}

Result<std::shared_ptr<gloo::transport::Device>> open_device(const GlooSettings& s) {
  if (s.transport == Transport::Ibverbs) return open_ibverbs_device(s);
  const std::string what = s.addr.empty() ? "interface " + s.iface : "address " + s.addr;
  try {
    gloo::transport::tcp::attr attr;
    if (!s.addr.empty()) {
      attr.hostname = s.addr;
    } else {
      attr.iface = s.iface;
    }
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return make_error("binding Gloo's tcp device to " + what + ": " + e.what());
  }
}

// What the ranks should check when connecting fails.
std::string connect_hint(const std::string& what) {
  if (what.find("File already exists") != std::string::npos) {
    return " (this run id was used before: every run needs a new --run-id / FABEMU_RUN_ID)";
  }
  if (what.find("Wait timeout") != std::string::npos) {
    return " (a rank did not arrive: are all started, with the same --run-id and --store?)";
  }
  return "";
}

}  // namespace

GlooCommunicator::GlooCommunicator(const GlooSettings& settings, RankInfo ranks)
    : settings_(settings), ranks_(ranks) {}

GlooCommunicator::~GlooCommunicator() = default;

Result<std::unique_ptr<GlooCommunicator>> GlooCommunicator::connect(const GlooSettings& s,
                                                                    RankInfo ranks) {
  // Ranks in other hosts create it at the same moment: make_dirs takes EEXIST as success.
  if (auto made = make_dirs(s.store_dir, 0777); !made) {
    return made.error().context("rendezvous directory " + s.store_dir);
  }
  if (::access(s.store_dir.c_str(), W_OK | X_OK) != 0) {
    return errno_error("rendezvous directory " + s.store_dir + " is not usable");
  }
  auto device = open_device(s);
  if (!device) return device.error();

  std::unique_ptr<GlooCommunicator> c(new GlooCommunicator(s, ranks));
  const std::string where = "connecting to the other " + std::to_string(ranks.size - 1) +
                            " ranks through " + s.store_dir + " (run id " + s.run_id + ")";
  try {
    c->file_store_ = std::make_unique<gloo::rendezvous::FileStore>(s.store_dir);
    c->store_ = std::make_unique<gloo::rendezvous::PrefixStore>(s.run_id, *c->file_store_);
    // A full mesh of this rank's pairs, met through `store`.
    auto mesh = [&](gloo::rendezvous::Store& store) {
      auto context = std::make_shared<gloo::rendezvous::Context>(ranks.rank, ranks.size);
      context->setTimeout(s.timeout);
      context->connectFullMesh(store, *device);
      return context;
    };
    // Under keys of their own: run_id-qpK, run_id-sync.
    auto mesh_under = [&](const std::string& suffix) {
      gloo::rendezvous::PrefixStore store(s.run_id + suffix, *c->file_store_);
      return mesh(store);
    };
    c->context_ = mesh(*c->store_);
    c->lanes_ = {c->context_};
    for (int k = 1; k < s.qps_per_peer && ranks.size > 1; ++k)
      c->lanes_.push_back(mesh_under("-qp" + std::to_string(k)));
    if (s.sync_max > 0 && ranks.size > 1) {
      auto sync = mesh_under("-sync");
      for (int i = 0; i < ranks.size; ++i)
        if (i != ranks.rank) sync->getPair(i)->setSync(true, /*busyPoll=*/false);
      c->sync_context_ = sync;
    }
    if (ranks.size > 1) c->barrier_ = std::make_unique<gloo::BarrierAllToAll>(c->context_);
  } catch (const std::exception& e) {
    return make_error(where + ": " + e.what() + connect_hint(e.what()));
  }
  return c;
}

std::string GlooCommunicator::transport() const {
  return std::string(name_of(settings_.transport));
}

std::string GlooCommunicator::algorithm(Collective c) const {
  switch (c) {
    case Collective::AllReduce:
      return std::string(name_of(settings_.allreduce));
    case Collective::AllGather:
      return "ring";
    case Collective::ReduceScatter:
      return "halving_doubling";
    case Collective::AllToAll:
      return "pairwise";
    case Collective::Broadcast:
      return "one_to_all";
  }
  return "?";
}

bool GlooCommunicator::in_place(Collective c) const {
  return c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Broadcast;
}

std::unique_ptr<gloo::Algorithm> GlooCommunicator::algorithm_on(
    const std::shared_ptr<gloo::Context>& ctx, const Layout& l, std::span<float> in,
    std::span<float> out, size_t stride, size_t offset) {
  const int n = ranks_.size;
  const int count = static_cast<int>(l.count);  // options cap sizes at 1G bytes
  const int block = static_cast<int>(l.block);
  switch (l.collective) {
    case Collective::AllReduce:
      switch (settings_.allreduce) {
        case AllreduceAlgorithm::RingChunked:
          return std::make_unique<gloo::AllreduceRingChunked<float>>(
              ctx, std::vector<float*>{out.data()}, count);
        case AllreduceAlgorithm::Ring:
          return std::make_unique<gloo::AllreduceRing<float>>(ctx, std::vector<float*>{out.data()},
                                                              count);
        case AllreduceAlgorithm::HalvingDoubling:
          return std::make_unique<gloo::AllreduceHalvingDoubling<float>>(
              ctx, std::vector<float*>{out.data()}, count);
      }
      break;
    case Collective::AllGather:
      return std::make_unique<gloo::AllgatherRing<float>>(ctx, std::vector<const float*>{in.data()},
                                                          out.data(), block);
    case Collective::ReduceScatter:
      return std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
          ctx, std::vector<float*>{out.data()}, block * n, std::vector<int>(n, block));
    case Collective::AllToAll:
      return std::make_unique<AlltoallPairwise>(ctx, in.data(), out.data(), l.block, stride,
                                                offset);
    case Collective::Broadcast:
      return std::make_unique<gloo::BroadcastOneToAll<float>>(ctx, std::vector<float*>{out.data()},
                                                              l.count, kBroadcastRoot);
  }
  return nullptr;
}

Result<std::unique_ptr<Operation>> GlooCommunicator::prepare(const Layout& l, std::span<float> in,
                                                             std::span<float> out) {
  if (ranks_.size == 1) return std::unique_ptr<Operation>(new LocalCopy(in, out));
  // Small allreduces over the sync pairs (GlooSettings::sync_max says why and when).
  const bool sync =
      sync_context_ && l.collective == Collective::AllReduce && l.size <= settings_.sync_max;
  try {
    if (lanes_.size() == 1 || !splits_across_qps(l.collective))
      return std::unique_ptr<Operation>(new AlgorithmOperation(
          algorithm_on(sync ? sync_context_ : context_, l, in, out), retired_));
    // Several connections per peer: each carries a slice (alltoall: a slice of every block).
    const bool alltoall = l.collective == Collective::AllToAll;
    std::vector<std::unique_ptr<Operation>> lanes;
    for (size_t k = 0; k < lanes_.size(); ++k) {
      const auto [first, count] = part(alltoall ? l.block : l.count, lanes_.size(), k);
      if (count == 0) continue;
      Layout slice = l;
      if (alltoall) {
        slice.block = count;
        lanes.push_back(std::make_unique<AlgorithmOperation>(
            algorithm_on(lanes_[k], slice, in, out, l.block, first), retired_));
      } else {
        slice.count = count;
        slice.size = count * sizeof(float);
        lanes.push_back(std::make_unique<AlgorithmOperation>(
            algorithm_on(lanes_[k], slice, in, out.subspan(first, count)), retired_));
      }
    }
    return std::unique_ptr<Operation>(new LanesOperation(std::move(lanes)));
  } catch (const std::exception& e) {
    return make_error(std::string("setting up Gloo's ") + algorithm(l.collective) + ": " +
                      e.what());
  }
}

Result<void> GlooCommunicator::barrier() {
  if (!barrier_) return ok();
  try {
    barrier_->run();
  } catch (const std::exception& e) {
    return make_error(std::string("barrier: ") + e.what());
  }
  return ok();
}

Result<std::vector<double>> GlooCommunicator::allgather(std::span<const double> mine) {
  std::vector<double> all(mine.size() * ranks_.size);
  if (ranks_.size == 1) {
    std::copy(mine.begin(), mine.end(), all.begin());
    return all;
  }
  try {
    auto ring = std::make_unique<gloo::AllgatherRing<double>>(
        context_, std::vector<const double*>{mine.data()}, all.data(),
        static_cast<int>(mine.size()));
    ring->run();
    retired_.push_back(std::move(ring));
  } catch (const std::exception& e) {
    return make_error(std::string("allgather: ") + e.what());
  }
  return all;
}

void GlooCommunicator::forget_rendezvous() {
  if (!file_store_) return;
  for (const auto& path : file_store_->getAllKeyFilePaths()) ::unlink(path.c_str());
}

}  // namespace fabemu::collective
