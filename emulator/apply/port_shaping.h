// Putting the link model on one port: attach, shape, offloads off, fq. Used by `up` (from the
// thread that is building the port's namespace) and by `fabemu link set` on a port that was
// not shaped yet (from a thread of its own).
#pragma once

#include <string>

#include "plan/plan.h"
#include "shaping/link_shaper.h"
#include "util/netlink.h"
#include "util/result.h"

namespace fabemu {

// The calling thread must be in the port's namespace and `rtnl` opened there. `set_gso`: the
// port was made without the one-packet GSO limit (created before it was shaped).
Result<void> shape_port_here(LinkShaper& shaper, const ShapePort& port, NetlinkSocket& rtnl,
                             bool set_gso);

// The same from a new thread that joins the namespace pinned at `netns_path`.
Result<void> shape_port_in(LinkShaper& shaper, const std::string& netns_path, const ShapePort& port,
                           bool set_gso);

}  // namespace fabemu
