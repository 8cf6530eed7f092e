// Opening the RDMA device for Gloo's ibverbs transport, with errors that say what exists.
#pragma once

#include <memory>

#include "collective/options.h"

namespace gloo::transport {
class Device;
}

namespace fabemu::collective {

// settings.ib_dev (or the only device), port settings.ib_port, GID settings.gid_index: checks
// that the device exists, the port is active and the GID is set, then creates Gloo's device.
Result<std::shared_ptr<gloo::transport::Device>> open_ibverbs_device(const GlooSettings& settings);

}  // namespace fabemu::collective
