// What the benchmark needs from a collective library (Gloo, MPI, or a fake in tests).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "util/result.h"

namespace fabemu::collective {

// One collective at one size, set up on one rank's buffers; run() as often as wanted.
class Operation {
 public:
  virtual ~Operation() = default;
  virtual Result<void> run() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string library() const = 0;
  virtual std::string transport() const = 0;
  // The algorithm that runs `c`, in the words of the library ("ring_chunked").
  virtual std::string algorithm(Collective c) const = 0;
  // Whether `c` works in place: the input is written into the output buffer (which then has
  // room for both) and prepare() gets an empty `in`.
  virtual bool in_place(Collective c) const = 0;
  virtual Result<std::unique_ptr<Operation>> prepare(const Layout& l, std::span<float> in,
                                                     std::span<float> out) = 0;
  virtual Result<void> barrier() = 0;
  // Every rank's `mine` (the same length on every rank), concatenated in rank order.
  virtual Result<std::vector<double>> allgather(std::span<const double> mine) = 0;
};

}  // namespace fabemu::collective
