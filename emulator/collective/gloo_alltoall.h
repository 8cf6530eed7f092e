// Alltoall as a Gloo algorithm on bound (per-pair) buffers, so that it runs over ibverbs as
// well as tcp: gloo::alltoall uses unbound buffers, which Gloo's ibverbs transport lacks.
//
// The schedule is gloo::alltoall's pairwise one: at step i (1..n-1) rank r sends its block
// for rank (r+i) mod n and receives the block of rank (r-i) mod n. Sends do not wait for each
// other, so all n-1 blocks are in flight at once, each on its own connection (tcp) or queue
// pair (ibverbs). A one-int "ready" message from each receiver comes first, so a block never
// lands in an output the receiver is still reading.
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include <gloo/algorithm.h>
#include <gloo/context.h>
#include <gloo/transport/buffer.h>

namespace fabemu::collective {

class AlltoallPairwise : public gloo::Algorithm {
 public:
  // `in` and `out` hold contextSize blocks of `block` floats; block i of `in` goes to rank i.
  // With a `stride` (>= offset + block), rank i's block starts at i * stride + offset instead:
  // one slice of every block, as each connection of several per peer carries (--qps-per-peer).
  AlltoallPairwise(const std::shared_ptr<gloo::Context>& context, float* in, float* out,
                   size_t block, size_t stride = 0, size_t offset = 0)
      : gloo::Algorithm(context),
        in_(in),
        out_(out),
        block_(block),
        stride_(stride ? stride : block),
        offset_(offset),
        peers_(contextSize_) {
    const size_t bytes = block_ * sizeof(float);
    const int data_slot = context_->nextSlot();
    const int ready_slot = context_->nextSlot();
    for (int r = 0; r < contextSize_; ++r) {
      if (r == contextRank_) continue;
      Peer& p = peers_[r];
      auto& pair = getPair(r);
      p.data_send = pair->createSendBuffer(data_slot, in_, stride_ * sizeof(float) * contextSize_);
      p.data_recv = pair->createRecvBuffer(data_slot, out_ + r * stride_ + offset_, bytes);
      p.ready_send = pair->createSendBuffer(ready_slot, &p.ready_out, sizeof(p.ready_out));
      p.ready_recv = pair->createRecvBuffer(ready_slot, &p.ready_in, sizeof(p.ready_in));
    }
  }

  void run() override {
    const size_t bytes = block_ * sizeof(float);
    const int n = contextSize_, rank = contextRank_;
    const size_t own = rank * stride_ + offset_;
    std::memcpy(out_ + own, in_ + own, bytes);
    for (int i = 1; i < n; ++i) peers_[(rank - i + n) % n].ready_send->send();
    for (int i = 1; i < n; ++i) {
      const int to = (rank + i) % n;
      peers_[to].ready_recv->waitRecv();
      peers_[to].data_send->send((to * stride_ + offset_) * sizeof(float), bytes);
    }
    for (int i = 1; i < n; ++i) peers_[(rank - i + n) % n].data_recv->waitRecv();
    // The caller refills `in` next: the sends must be done with it.
    for (int i = 1; i < n; ++i) {
      Peer& p = peers_[(rank + i) % n];
      p.data_send->waitSend();
      p.ready_send->waitSend();
    }
  }

 private:
  struct Peer {
    int ready_out = 0;
    int ready_in = 0;
    std::unique_ptr<gloo::transport::Buffer> data_send;
    std::unique_ptr<gloo::transport::Buffer> data_recv;
    std::unique_ptr<gloo::transport::Buffer> ready_send;
    std::unique_ptr<gloo::transport::Buffer> ready_recv;
  };

  float* in_;
  float* out_;
  size_t block_, stride_, offset_;
  std::vector<Peer> peers_;  // indexed by rank; our own entry stays empty
};

}  // namespace fabemu::collective
