// The HTML report's section on replayed training steps (docs/replay.md).
#pragma once

#include <string>

#include "report/report.h"

namespace fabemu {

// Per replay step: its iterations beside the model, its collectives, and the first timed
// iteration as a timeline per rank (inline SVG); "" without replay steps.
std::string replay_html(const RunReport& r);

}  // namespace fabemu
