// Link shapes and link names as scenario YAML writes them; shared by the links section,
// explicit topology links, the rail scale-up domain and faults. Internal to the loader.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/link_shape_text.h"
#include "scenario/scenario.h"
#include "scenario/yaml_field.h"

namespace fabemu::detail {

// The link-shape keys followed by `extra`, for maps that hold a shape and more ("link: a:b").
std::vector<std::string_view> link_shape_keys_and(std::initializer_list<std::string_view> extra);

// The link-shape keys present in `map`; other keys are the caller's to check. `mtu` is the
// fabric's: a byte queue must hold one full-size packet.
LinkShape read_link_shape(const Field& map, uint32_t mtu);

// A mapping that holds only link-shape keys.
LinkShape read_link_shape_only(const Field& map, uint32_t mtu);

// A change to live links, as `fabemu link set` takes it: "off" turns a setting off.
LinkShape read_link_change(const Field& map, uint32_t mtu);

// A link name, "a:b" (both directions) or "a>b" (a to b only), of two different node names.
std::string read_link_name(const Field& field);

}  // namespace fabemu::detail
