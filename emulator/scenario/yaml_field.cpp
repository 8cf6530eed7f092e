// Field: located, typed access to yaml-cpp nodes for the scenario loader.
#include "scenario/yaml_field.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace fabemu::detail {

std::string join(std::span<const std::string_view> words) {
  std::string out;
  for (std::string_view w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

Field Field::root(const YAML::Node& node, const std::string& file) {
  return Field(node, "", node.Mark(), &file);
}

SourceLoc Field::loc() const {
  // yaml-cpp counts from 0 and has no position for an empty document; people count from 1.
  if (mark_.line < 0) return SourceLoc{*file_, 1, 1};
  return SourceLoc{*file_, mark_.line + 1, mark_.column + 1};
}

void Field::fail(const std::string& what) const {
  std::string where = path_.empty() ? "" : path_ + ": ";
  throw ScenarioError(loc().str() + ": " + where + what);
}

std::string Field::kind_name() const {
  switch (node_.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "'" + node_.Scalar() + "'";
    default:
      return "nothing";
  }
}

std::string Field::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void Field::expect_map() const {
  if (!node_.IsMap()) fail("expected a mapping of keys to values, got " + kind_name());
}

std::vector<std::pair<Field, Field>> Field::entries() const {
  expect_map();
  std::vector<std::pair<Field, Field>> out;
  std::set<std::string> seen;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    Field key(it->first, path_, it->first.Mark(), file_);
    if (!it->first.IsScalar()) key.fail("keys must be plain names, got " + key.kind_name());
    std::string name = it->first.Scalar();
    key.path_ = child_path(name);
    // yaml-cpp keeps both copies of a repeated key and lookups see only the first; a user who
    // wrote the key twice meant one of them, and we cannot tell which.
    if (!seen.insert(name).second) key.fail("appears twice in this mapping; write each key once");
    // An empty value has no position of its own (yaml-cpp puts it on the next line); point at
    // its key instead.
    YAML::Mark mark = it->second.IsNull() ? it->first.Mark() : it->second.Mark();
    out.emplace_back(key, Field(it->second, key.path_, mark, file_));
  }
  return out;
}

void Field::check_keys(std::span<const std::string_view> valid) const {
  for (const auto& [key, value] : entries()) {
    std::string name = key.node().Scalar();
    if (std::find(valid.begin(), valid.end(), name) == valid.end()) {
      key.fail("unknown key; valid: " + join(valid));
    }
  }
}

std::optional<Field> Field::find(std::string_view key) const {
  for (auto& [k, v] : entries()) {
    if (k.node().Scalar() == key) return v;
  }
  return std::nullopt;
}

Field Field::at(std::string_view key, std::string_view valid) const {
  auto f = find(key);
  if (!f) {
    // Reported at the mapping that lacks the key, under the key's own path.
    std::string what = "missing; this key is required";
    if (!valid.empty()) what += "; valid: " + std::string(valid);
    Field(YAML::Node(), child_path(key), mark_, file_).fail(what);
  }
  return *f;
}

std::vector<Field> Field::items() const {
  if (!node_.IsSequence()) fail("expected a list, got " + kind_name());
  std::vector<Field> out;
  for (size_t i = 0; i < node_.size(); ++i) {
    YAML::Node item = node_[i];
    YAML::Mark mark = item.IsNull() ? mark_ : item.Mark();
    out.push_back(Field(item, path_ + "[" + std::to_string(i) + "]", mark, file_));
  }
  return out;
}

std::string Field::str() const {
  if (!node_.IsScalar()) fail("expected a single value, got " + kind_name());
  return node_.Scalar();
}

int64_t Field::integer(int64_t min, int64_t max) const {
  std::string s = str();
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  std::string range = max == std::numeric_limits<int64_t>::max()
                          ? "an integer >= " + std::to_string(min)
                          : "an integer " + std::to_string(min) + ".." + std::to_string(max);
  if (ec != std::errc() || end != s.data() + s.size())
    fail("expected " + range + ", got " + kind_name());
  if (value < min || value > max) fail(std::to_string(value) + " is out of range; valid: " + range);
  return value;
}

uint64_t Field::uint64() const {
  std::string s = str();
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) {
    fail("expected an integer 0.." + std::to_string(std::numeric_limits<uint64_t>::max()) +
         ", got " + kind_name());
  }
  return value;
}

double Field::number() const {
  std::string s = str();
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) {
    fail("expected a number, got " + kind_name());
  }
  return value;
}

std::string Field::one_of(std::initializer_list<std::string_view> valid) const {
  std::string s = str();
  if (std::find(valid.begin(), valid.end(), s) == valid.end()) {
    fail("unknown value '" + s +
         "'; valid: " + join(std::span<const std::string_view>(valid.begin(), valid.size())));
  }
  return s;
}

bool Field::boolean() const {
  // YAML 1.2 spellings only: yaml-cpp would also take y/n/on/off, which read as words.
  std::string s = str();
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  fail("expected true or false, got " + kind_name());
}

}  // namespace fabemu::detail
