// The benchmark's Gloo backend: a file-store rendezvous, a tcp or ibverbs device, and Gloo's
// algorithm classes (bound buffers), which both transports implement.
#pragma once

#include <memory>
#include <vector>

#include "collective/communicator.h"
#include "collective/options.h"

namespace gloo {
class Algorithm;
class Context;
class BarrierAllToAll;
namespace rendezvous {
class FileStore;
class PrefixStore;
}  // namespace rendezvous
}  // namespace gloo

namespace fabemu::collective {

class GlooCommunicator final : public Communicator {
 public:
  // Meets the other ranks under settings.store_dir/run_id and connects every pair; fails after
  // settings.timeout when some rank does not come.
  static Result<std::unique_ptr<GlooCommunicator>> connect(const GlooSettings& settings,
                                                           RankInfo ranks);
  ~GlooCommunicator() override;

  int rank() const override { return ranks_.rank; }
  int size() const override { return ranks_.size; }
  std::string library() const override { return "gloo"; }
  std::string transport() const override;
  std::string algorithm(Collective c) const override;
  bool in_place(Collective c) const override;
  Result<std::unique_ptr<Operation>> prepare(const Layout& l, std::span<float> in,
                                             std::span<float> out) override;
  Result<void> barrier() override;
  Result<std::vector<double>> allgather(std::span<const double> mine) override;

  // Removes the key this rank wrote to the file store. Only after a barrier that every rank
  // reached after connecting: by then all have read it.
  void forget_rendezvous();

 private:
  GlooCommunicator(const GlooSettings& settings, RankInfo ranks);
  // One Gloo algorithm for `l` on `ctx`; alltoall's blocks `stride` apart from `offset` (0: the
  // whole blocks, l.block apart).
  std::unique_ptr<gloo::Algorithm> algorithm_on(const std::shared_ptr<gloo::Context>& ctx,
                                                const Layout& l, std::span<float> in,
                                                std::span<float> out, size_t stride = 0,
                                                size_t offset = 0);

  GlooSettings settings_;
  RankInfo ranks_;
  std::unique_ptr<gloo::rendezvous::FileStore> file_store_;
  std::unique_ptr<gloo::rendezvous::PrefixStore> store_;
  std::shared_ptr<gloo::Context> context_;
  std::shared_ptr<gloo::Context> sync_context_;  // settings.sync_max's pairs, when set
  // With settings.qps_per_peer N: context_ and N - 1 more full meshes, one connection (tcp) or
  // queue pair (ibverbs) per peer each; lanes_[0] is context_.
  std::vector<std::shared_ptr<gloo::Context>> lanes_;
  std::unique_ptr<gloo::BarrierAllToAll> barrier_;
  // Algorithms that have run, kept until the process ends: Gloo's ibverbs buffers refuse to be
  // destroyed while a send's completion is still on its way (the last notifications of a ring,
  // a barrier's messages), so nothing that has sent is ever destroyed. The owner ends the
  // process with std::_Exit after a final barrier (see main.cpp).
  std::vector<std::unique_ptr<gloo::Algorithm>> retired_;
};

}  // namespace fabemu::collective
