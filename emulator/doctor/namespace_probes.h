// The doctor's own probes that need a network namespace: namespaces, links, bridges, ECMP, the
// qdiscs and devices fabemu does not use (netem, tbf, ifb). What `up` uses is asked through the
// capability module (doctor/capabilities.h).
#pragma once

#include <vector>

#include "doctor/probe.h"

namespace fabemu::doctor {

// Moves the calling thread into fresh network and UTS namespaces and tries each feature there.
// Call it only on a thread made for it: the thread can never return to the host's namespaces,
// and everything the probes create disappears with them when the thread ends.
// Fills id, status, detail and, where the probe knows better than the catalog, cost.
std::vector<FeatureProbe> run_namespace_probes();

}  // namespace fabemu::doctor
