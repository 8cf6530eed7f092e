// A training step to replay, whatever file described it (SimAI's workload text, Chakra's
// execution traces): each rank's operations in issue order, with what each waits for. The
// readers (simai.h, chakra.h) build it; the ranks run it (fabemu-collective --replay) and the
// link model predicts it (schedule.h). Pure data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/collectives.h"
#include "util/result.h"

namespace fabemu::replay {

enum class OpKind { Compute, Collective, Send, Recv };

// Which pass of the step an operation belongs to (SimAI's three per layer), for the report.
enum class Pass { Forward, InputGradient, WeightGradient, Update, Other };
std::string_view name_of(Pass p);  // "forward", "input_gradient", "weight_gradient", ...

struct Op {
  OpKind kind = OpKind::Compute;
  std::string layer;  // SimAI's layer name, Chakra's node name
  Pass pass = Pass::Other;
  uint64_t compute_ns = 0;  // Compute: how long, in the real fabric's time
  Collective collective = Collective::AllReduce;
  int group = -1;  // Collective, Send, Recv: Program::groups index
  // Collective: nccl-tests' size (allreduce's buffer, allgather's output, reducescatter's input,
  // alltoall's send buffer); Send/Recv: the message.
  uint64_t bytes = 0;
  int peer = -1;             // Send/Recv: the other rank
  std::vector<size_t> deps;  // indices of this rank's earlier operations it waits for
  int source = 0;            // SimAI: the file's line; Chakra: the node's id
};

// A communicator: its ranks in order (a Send/Recv pair's group lists the sender first).
struct Group {
  std::vector<int> ranks;
  // "tp", "dp", "ep", "dp_ep", "pp_fwd" / "pp_bwd" (a pair of stages, activations forward and
  // gradients back), "world", "p2p", or Chakra's "pg ..."
  std::string kind;
};

struct Program {
  std::string format;  // "simai" | "chakra"
  std::string source;  // the file (or trace prefix) read
  int world = 0;
  std::vector<Group> groups;
  std::vector<std::vector<Op>> ranks;  // world entries; ops in issue order, deps earlier
  // SimAI's header: the parallel layout as given (1 where the format has none).
  std::string policy;
  int tp = 1, dp = 1, ep = 1, pp = 1;
  int layers = 0;

  // The stream an operation runs on: 0 computes; each group's operations run on a stream of
  // their own, in issue order (as NCCL runs a communicator's work on its stream).
  static int stream_of(const Op& op) { return op.kind == OpKind::Compute ? 0 : op.group + 1; }
  // Bytes a rank needs for its buffers: on each of its streams, the largest operation's input
  // and output together (float32 elements, as the benchmark sizes them).
  uint64_t memory_bytes(int rank) const;
  // One line: "simai: 8 ranks (tp 8, dp 1), 1 layer, 3 operations per rank, 1 collective".
  std::string describe() const;
};

// The most operations (over all ranks) a program may hold.
constexpr uint64_t kMaxOperations = 4'000'000;

// "allreduce 512MiB on tp [0-7]" for reports and errors.
std::string describe_op(const Program& p, const Op& op);

// The group of the given ranks and kind, added unless there is one with the same ranks (whose
// kind a collective's replaces if it was "p2p").
int add_group(Program& p, std::vector<int> ranks, const std::string& kind);

// Checks what a reader built (deps earlier, groups that hold the rank, sends and receives that
// match, every group's collectives issued in the same order by each member); the first problem.
Result<void> validate(const Program& p);

}  // namespace fabemu::replay
