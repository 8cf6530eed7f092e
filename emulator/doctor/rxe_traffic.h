// Whether soft-RoCE carries traffic between two network namespaces, as emulated hosts need.
#pragma once

#include <string>

#include "doctor/probe.h"

namespace fabemu::doctor {

struct RxeTraffic {
  ProbeStatus status = ProbeStatus::Unknown;  // Yes, No, or Partial when it could not be tried
  std::string detail;
};

// Two throwaway namespaces joined by a veth, an rxe device on each end, and ibv_rc_pingpong
// (RC QP, RoCEv2 GID 1) between them. Kernels before 7.1 create the devices but pass nothing
// between namespaces; only traffic tells. Bounded to a few seconds; needs root.
RxeTraffic probe_rxe_traffic();

}  // namespace fabemu::doctor
