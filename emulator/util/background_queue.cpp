// BackgroundQueue: one worker thread, a FIFO of jobs, the first error kept for wait().
#include "util/background_queue.h"

namespace fabemu {

BackgroundQueue::~BackgroundQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  if (worker_.joinable()) worker_.join();
}

void BackgroundQueue::push(std::function<Result<void>()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
  }
  wake_.notify_one();
}

Result<void> BackgroundQueue::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return jobs_.empty() && !busy_; });
  if (!error_) return ok();
  Error e = std::move(*error_);
  error_.reset();
  return e;
}

void BackgroundQueue::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and nothing left
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lock.unlock();
    Result<void> r = job();
    lock.lock();
    busy_ = false;
    if (!r && !error_) error_ = r.error();
    if (jobs_.empty()) idle_.notify_all();
  }
}

}  // namespace fabemu
