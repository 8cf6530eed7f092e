// The benchmark's MPI backend: MPI_COMM_WORLD of a job launched by mpirun, and the library's
// own choice of algorithm for each collective.
#pragma once

#include <memory>

#include "collective/communicator.h"

namespace fabemu::collective {

class MpiCommunicator final : public Communicator {
 public:
  // MPI_Init. Only for processes mpirun started: a singleton MPI_Init would also work, but
  // would hide a launch mistake behind a run of one rank.
  static Result<std::unique_ptr<MpiCommunicator>> init(int* argc, char*** argv);
  ~MpiCommunicator() override;  // MPI_Finalize

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string library() const override { return "mpi"; }
  // MPI picks its transport (Open MPI: pml/btl) and algorithms (coll/tuned) itself.
  std::string transport() const override { return "auto"; }
  std::string algorithm(Collective) const override { return "auto"; }
  bool in_place(Collective c) const override { return c == Collective::Broadcast; }
  Result<std::unique_ptr<Operation>> prepare(const Layout& l, std::span<float> in,
                                             std::span<float> out) override;
  Result<void> barrier() override;
  Result<std::vector<double>> allgather(std::span<const double> mine) override;

  // Ends every rank of the job: one rank's failure would otherwise leave the rest waiting.
  [[noreturn]] void abort(int code);

 private:
  MpiCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank_;
  int size_;
};

// Whether this process was started by an MPI launcher (Open MPI, MPICH/Hydra, Slurm's PMI).
bool launched_by_mpi();

}  // namespace fabemu::collective
