// MPI backend: each collective is one MPI call on MPI_COMM_WORLD.
#include "collective/mpi_communicator.h"

#include <mpi.h>

#include <cstdlib>

namespace fabemu::collective {
namespace {

Result<void> check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return ok();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return make_error(std::string(call) + ": " + std::string(text, len));
}

class MpiOperation final : public Operation {
 public:
  MpiOperation(const Layout& l, std::span<float> in, std::span<float> out)
      : layout_(l), in_(in), out_(out) {}

  Result<void> run() override {
    const int count = static_cast<int>(layout_.count);  // options cap sizes at 1G bytes
    const int block = static_cast<int>(layout_.block);
    switch (layout_.collective) {
      case Collective::AllReduce:
        return check(
            MPI_Allreduce(in_.data(), out_.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
            "MPI_Allreduce");
      case Collective::AllGather:
        return check(MPI_Allgather(in_.data(), block, MPI_FLOAT, out_.data(), block, MPI_FLOAT,
                                   MPI_COMM_WORLD),
                     "MPI_Allgather");
      case Collective::ReduceScatter:
        return check(MPI_Reduce_scatter_block(in_.data(), out_.data(), block, MPI_FLOAT, MPI_SUM,
                                              MPI_COMM_WORLD),
                     "MPI_Reduce_scatter_block");
      case Collective::AllToAll:
        return check(MPI_Alltoall(in_.data(), block, MPI_FLOAT, out_.data(), block, MPI_FLOAT,
                                  MPI_COMM_WORLD),
                     "MPI_Alltoall");
      case Collective::Broadcast:
        return check(MPI_Bcast(out_.data(), count, MPI_FLOAT, kBroadcastRoot, MPI_COMM_WORLD),
                     "MPI_Bcast");
    }
    return make_error("unknown collective");
  }

 private:
  Layout layout_;
  std::span<float> in_;
  std::span<float> out_;
};

}  // namespace

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(var)) return true;
  }
  return false;
}

Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::init(int* argc, char*** argv) {
  if (!launched_by_mpi()) {
    return make_error("--library mpi needs an MPI launcher: mpirun -np N fabemu-collective ...");
  }
  FABEMU_TRY(check(MPI_Init(argc, argv), "MPI_Init"));
  // Errors come back to us, which reports them and aborts the job, instead of MPI killing
  // the process with its own message.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(rank, size));
}

MpiCommunicator::~MpiCommunicator() {
  MPI_Finalize();
}

Result<std::unique_ptr<Operation>> MpiCommunicator::prepare(const Layout& l, std::span<float> in,
                                                            std::span<float> out) {
  return std::unique_ptr<Operation>(new MpiOperation(l, in, out));
}

Result<void> MpiCommunicator::barrier() {
  return check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

Result<std::vector<double>> MpiCommunicator::allgather(std::span<const double> mine) {
  std::vector<double> all(mine.size() * size_);
  const int n = static_cast<int>(mine.size());
  auto rc =
      check(MPI_Allgather(mine.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, MPI_COMM_WORLD),
            "MPI_Allgather");
  if (!rc) return rc.error();
  return all;
}

void MpiCommunicator::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace fabemu::collective
