// The soft-RoCE part of `status`: each host's rxe device, its port, GID and counters.
#pragma once

#include "plan/plan.h"
#include "util/json.h"

namespace fabemu::cli {

// "rdma": {"mode": "rxe"|"off", "reason", "devices": [{host, device, present, netdev, state,
// phys_state, gid1, gid1_type, hw_counters: {...}, counters: {...}}]}, as one more field of
// the open status object.
void rdma_status_json(JsonWriter& j, const LabModel& model, const LabPaths& paths);

// A table of the hosts' devices, or why the lab has none.
void print_rdma_status(const LabModel& model, const LabPaths& paths);

}  // namespace fabemu::cli
