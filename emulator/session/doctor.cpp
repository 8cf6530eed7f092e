// `doctor`: every probe afresh; the capacity measured by a calibration lab when asked.
#include "doctor/probe.h"
#include "runtime/calibrate.h"
#include "session/session.h"

namespace fabemu::session {

Calibrator calibrator(const std::string& run_root) {
  return [run_root](const PlanOptions& plan,
                    const std::function<void(const std::string&)>& progress, CapacityKind kind) {
    CalibrationSetup setup;
    setup.base.run_root = run_root;
    setup.plan = plan;
    if (kind == CapacityKind::Gso) setup.gso_bytes = kCalibrationGsoBytes;
    setup.workload = workload_options("");
    setup.progress = progress;
    return calibrate(setup);
  };
}

DoctorOutcome doctor(bool calibrate, const std::string& run_root, Observer& observer) {
  DoctorOutcome out;
  out.kernel = kernel_info();
  out.probes = probe_features(
      run_root, calibrate, [&observer](const std::string& line) { observer.remark(line); },
      calibrator(run_root));
  return out;
}

Json DoctorOutcome::to_json() const {
  return doctor_json(kernel, probes);
}

}  // namespace fabemu::session
