// Sockets of another process's network namespace, read from /proc/PID/net.
#pragma once

#include <sys/types.h>

#include <string>

namespace fabemu {

// Whether process `pid` is inside the network namespace pinned at `netns_path` and a TCP
// socket listens on `port` there (IPv4 or IPv6): how a parent sees that a server it started in
// an emulated host is ready for its client.
bool listening_in(pid_t pid, const std::string& netns_path, int port);

}  // namespace fabemu
