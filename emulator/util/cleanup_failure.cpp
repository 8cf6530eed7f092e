#include "util/cleanup_failure.h"

#include <mutex>

namespace fabemu {
namespace {

std::mutex g_mu;
std::function<void(const std::string&)> g_handler;

}  // namespace

void set_cleanup_failure_handler(std::function<void(const std::string&)> handler) {
  std::lock_guard lock(g_mu);
  g_handler = std::move(handler);
}

void report_cleanup_failure(const std::string& what) {
  std::lock_guard lock(g_mu);
  if (g_handler) g_handler(what);
}

}  // namespace fabemu
