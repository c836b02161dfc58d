// PCI bus id helpers shared by the topology record and the GPU queries (internal to src/topology and its tests).
#pragma once

#include <string>

namespace tether {

// Canonical PCI bus id: lower-case hex, 4-digit domain, "dddd:bb:dd.f" (the form sysfs uses under
// /sys/bus/pci/devices). Accepts CUDA's "0000:3B:00.0", NVML's "00000000:3B:00.0" and a domain-less "3b:00.0".
// Anything it does not recognise is returned lower-cased, unchanged otherwise.
std::string canonicalPciBusId(const std::string& busId);

}  // namespace tether
