// BackgroundQueue: runs jobs in order on one worker thread; wait() reports the first failure.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "util/result.h"

namespace fabemu {

class BackgroundQueue {
 public:
  BackgroundQueue() = default;
  BackgroundQueue(const BackgroundQueue&) = delete;
  BackgroundQueue& operator=(const BackgroundQueue&) = delete;
  ~BackgroundQueue();

  // Starts the worker on first use. Jobs after a failed one still run.
  void push(std::function<Result<void>()> job);
  // Blocks until every pushed job has run; returns (and forgets) the first error.
  Result<void> wait();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<Result<void>()>> jobs_;
  bool busy_ = false, stop_ = false;
  std::optional<Error> error_;
  std::thread worker_;
};

}  // namespace fabemu
