// libFuzzer target: one text through every parser of a quantity the CLI and scenario files take
// (units, `link set`'s shape options, fabemu-collective's --sizes), and what parses back through
// its formatter. Each input goes to all of them rather than to one picked by a selector byte: a
// parser costs microseconds, and the corpus stays plain text that reads as what it tests.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "collective/options.h"
#include "scenario/link_shape_text.h"
#include "util/units.h"

namespace {

// A broken promise of the parsers' headers, kept by libFuzzer like a crash.
void require(bool promise) {
  if (!promise) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A view of libFuzzer's exact-size buffer, not a copy: a read past the text is ASan's to see.
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace fabemu;

  // format_* promise a spelling their parser reads back to the same value.
  if (auto v = parse_rate(text)) {
    require(*v > 0);
    auto back = parse_rate(format_rate(*v));
    require(back && *back == *v);
    (void)format_rate_short(static_cast<double>(*v));
  }
  if (auto v = parse_time_ns(text)) {
    auto back = parse_time_ns(format_time_ns(*v));
    require(back && *back == *v);
    (void)format_time_short(*v);
  }
  if (auto v = parse_size_bytes(text)) {
    auto back = parse_size_bytes(format_size(*v));
    require(back && *back == *v);
  }
  if (auto v = parse_loss(text)) require(*v >= 0 && *v <= 1);
  if (auto v = collective::parse_size_list(text)) {
    for (uint64_t s : *v) require(s >= 1 && s <= collective::kMaxSize);
  }

  // `link set --KEY TEXT` before and after the lab's MTU is known, and a scenario's KEY: TEXT.
  for (std::string_view key : kLinkShapeKeys) {
    for (uint32_t mtu : {0u, 1500u}) {
      LinkShape change;
      if (set_link_shape_field(change, key, text, mtu, ShapeSyntax::Change)) (void)change.str();
    }
    LinkShape shape;
    if (set_link_shape_field(shape, key, text, 1500, ShapeSyntax::Scenario)) (void)shape.str();
  }
  return 0;
}
