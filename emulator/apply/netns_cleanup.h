// Waiting for the kernel to finish freeing network namespaces.
//
// When a namespace's last reference goes (a lab's pins detached, its processes gone) the
// kernel frees it later, on one worker: every device unregistered in one batch under the RTNL
// lock, then sysctls and the rest. A 512-host lab is ~0.6 s of that work, and a lab brought up
// meanwhile waits for the same lock (`up` took 1.5-1.8 s instead of 0.96 s back to back).
#pragma once

#include <chrono>

#include "util/result.h"

namespace fabemu {

// Returns once the kernel has freed every network namespace whose last reference was dropped
// before the call. It drops two sentinel namespaces of its own, one after the other, each with
// a veth into a watcher namespace: the kernel frees namespaces in order, one batch at a time,
// so the second sentinel's veth disappears only after the batch that held the earlier
// namespaces has finished. A few milliseconds when nothing is pending. Fails with ETIMEDOUT
// when the kernel is not done within `timeout`.
Result<void> wait_for_netns_cleanup(std::chrono::milliseconds timeout);

}  // namespace fabemu
