// Field: a yaml-cpp node together with where it is and the path that reached it, so every
// scenario error can read "file:line:col: topology.leaves: what is wrong; what is valid".
// Internal to the scenario loader.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scenario/scenario.h"
#include "util/result.h"

namespace fabemu::detail {

// Thrown while walking the document; the public loader turns it into an Error. Exceptions keep
// the many small checks of the walk free of error plumbing and end at the parse boundary.
class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Field {
 public:
  // The document's root; `file` must outlive every Field made from it.
  static Field root(const YAML::Node& node, const std::string& file);

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  SourceLoc loc() const;
  bool is_null() const { return node_.IsNull(); }
  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }

  // Throws "loc: path: what". `what` says what is wrong and what would be valid.
  [[noreturn]] void fail(const std::string& what) const;

  // --- Mappings. Each checks that this is a mapping without repeated keys.
  // Fails at the first key not in `valid`, listing the valid ones.
  void check_keys(std::span<const std::string_view> valid) const;
  void check_keys(std::initializer_list<std::string_view> valid) const {
    check_keys(std::span<const std::string_view>(valid.begin(), valid.size()));
  }
  bool has(std::string_view key) const { return find(key).has_value(); }
  // The value under `key`, or nullopt if the key is absent. A key written with no value
  // ("key:") is present, with a null node; typed accessors reject it.
  std::optional<Field> find(std::string_view key) const;
  // The value under `key`, or an error that it is required; `valid` lists what could go there.
  Field at(std::string_view key, std::string_view valid = "") const;
  // (key, value) pairs in file order.
  std::vector<std::pair<Field, Field>> entries() const;

  // --- Sequences.
  std::vector<Field> items() const;

  // --- Scalars. Each fails with what it expected when the node is not one.
  std::string str() const;
  int64_t integer(int64_t min, int64_t max = std::numeric_limits<int64_t>::max()) const;
  uint64_t uint64() const;
  double number() const;  // finite
  bool boolean() const;   // true or false

  // The scalar through a units parser ("25gbit" -> 25000000000), its error located here.
  template <typename T>
  T parsed(Result<T> (*parse)(std::string_view)) const {
    auto r = parse(str());
    if (!r) fail(r.error().message);
    return std::move(r).value();
  }

  // One of a fixed set of words, as written.
  std::string one_of(std::initializer_list<std::string_view> valid) const;

  // One of a fixed set of words, mapped to a value.
  template <typename E>
  E choice(std::initializer_list<std::pair<std::string_view, E>> values) const {
    std::string s = str();
    std::string valid;
    for (const auto& [word, value] : values) {
      if (s == word) return value;
      valid += (valid.empty() ? "" : ", ") + std::string(word);
    }
    fail("unknown value '" + s + "'; valid: " + valid);
  }

 private:
  Field(YAML::Node node, std::string path, YAML::Mark mark, const std::string* file)
      : node_(std::move(node)), path_(std::move(path)), mark_(mark), file_(file) {}
  void expect_map() const;
  std::string kind_name() const;  // "a mapping", "a list", ...
  std::string child_path(std::string_view key) const;

  YAML::Node node_;
  std::string path_;  // "topology.nodes[2].name"; empty at the root
  YAML::Mark mark_;   // of the value, or of its key when the value is empty
  const std::string* file_;
};

// "a, b, c" for error messages.
std::string join(std::span<const std::string_view> words);

}  // namespace fabemu::detail
