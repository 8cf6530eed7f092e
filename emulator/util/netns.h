// Named namespaces: create and pin (the way `ip netns add` does), enter, and remove.
#pragma once

#include <functional>
#include <string>

#include "util/result.h"
#include "util/unique_fd.h"

namespace fabemu {

// Moves the calling thread into a new network namespace (and a new UTS namespace with
// `hostname` when uts_path is non-empty) and pins them by bind mounts at the given paths.
// Returns an fd of the new network namespace. The thread stays in the new namespaces.
// unshare() is retried for a while on ENODEV: on kernel 7.3 it fails so, now and then, just
// after a namespace that held rxe devices was torn down (seen in the VM lane).
Result<UniqueFd> create_pinned_namespace(const std::string& net_path, const std::string& uts_path,
                                         const std::string& hostname);

// unshare(flags), retried for up to a second while it fails with ENODEV (see above); 0 or -1
// with errno, like unshare.
int unshare_retrying(int flags);

// Detaches the bind mount at `path` and removes the file; fine when already gone.
Result<void> unpin_namespace(const std::string& path);

// Opens a pinned namespace file (or /proc/.../ns/X).
Result<UniqueFd> open_namespace(const std::string& path);

// Joins the namespace behind `fd` (nstype CLONE_NEWNET, CLONE_NEWUTS, ...) on this thread.
Result<void> enter_namespace(int fd, int nstype, const std::string& what);

// Runs f() on a new thread that has joined the network namespace at `path`, and waits; the
// caller's own threads never change namespace.
// The calling thread (or process) gets a mount namespace of its own, whose mounts do not reach
// the host's (the host's unmounts still reach it): a node's view of /etc, /tmp and /sys.
Result<void> enter_private_mounts();
Result<void> bind_mount(const std::string& from, const std::string& to);

Result<void> run_in_netns(const std::string& path, const std::function<Result<void>()>& f);

}  // namespace fabemu
