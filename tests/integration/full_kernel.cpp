// FABEMU_FULL_KERNEL=1 (the VM lane, tests/CMakeLists.txt): the kernel has every feature fabemu
// probes, and the lane runs exactly the tests that need one, so a test that skips there skipped
// for a reason the lane exists to rule out; it fails, naming the reason it gave.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace fabemu::itest {
namespace {

class FullKernelListener : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const ::testing::TestResult& result = *info.result();
    if (!result.Skipped()) return;
    std::string why;
    for (int i = 0; i < result.total_part_count(); ++i)
      if (result.GetTestPartResult(i).skipped()) why += result.GetTestPartResult(i).message();
    ADD_FAILURE() << "skipped where FABEMU_FULL_KERNEL says the kernel has every feature: " << why;
  }
};

const bool registered = [] {
  const char* full = std::getenv("FABEMU_FULL_KERNEL");
  if (full && std::string(full) == "1")
    ::testing::UnitTest::GetInstance()->listeners().Append(new FullKernelListener);
  return true;
}();

}  // namespace
}  // namespace fabemu::itest
