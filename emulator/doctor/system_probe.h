// SystemProbe: the running kernel's answers to the capability questions, each found by doing
// what `up` does in a throwaway namespace, and kept for the rest of the boot.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "doctor/capabilities.h"

namespace fabemu {

class SystemProbe : public KernelProbe {
 public:
  // Verdicts of earlier probes this boot are kept under `run_root` (/run/fabemu) and reused
  // while the kernel's relevant modules and the link model's program are the same. `fresh`
  // (the doctor) probes again and rewrites them. Without root, what needs root is Unknown
  // unless a verdict of this boot is kept.
  SystemProbe(std::string run_root, bool fresh);

  Capability fq() override;
  Capability htb() override;
  LinkModelCapability link_model() override;
  Capability pfc_qdisc() override;
  Capability ovs_kernel() override;
  Capability ovs_userspace() override;
  Capability rxe() override;
  Capability cgroup(const std::string& controller) override;
  std::optional<std::vector<std::string>> congestion_controls() override;
  Capability ecmp_seed() override;
  std::optional<Capacity> capacity(bool measure, std::string& why,
                                   CapacityKind kind = CapacityKind::Plain) override;

  // Where calibration's progress goes (one line per trial); unset: nowhere.
  std::function<void(const std::string&)> progress;
  // How the capacity is measured (probe.h); unset: the capacity is only what this boot kept.
  Calibrator calibrator;

 private:
  // fq, htb and the link model, tried together in one throwaway namespace (~20 ms), or read
  // from this boot's verdict.
  struct NamespaceVerdicts {
    Capability fq, htb;
    LinkModelCapability link_model;
  };
  const NamespaceVerdicts& namespace_verdicts();

  std::string run_root_;
  bool fresh_;
  bool root_;
  std::optional<NamespaceVerdicts> ns_;
};

}  // namespace fabemu
