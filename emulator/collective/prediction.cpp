// Reading prediction files: a small JSON parser (the repo's util/json.h only writes) and the
// linear time model.
#include "collective/prediction.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "util/files.h"

namespace fabemu::collective {
namespace {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in file order

  const JsonValue* find(std::string_view key) const {
    for (const auto& [k, v] : object) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

// Recursive descent over the whole grammar, so that a model writing more than this reader
// needs still parses. Errors say where: "file: line 3, column 14: expected ':'".
class JsonParser {
 public:
  JsonParser(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  Result<JsonValue> document() {
    JsonValue v;
    if (!value(v, 0)) return error_;
    skip_space();
    if (pos_ != text_.size()) {
      fail("unexpected text after the JSON value");
      return error_;
    }
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool fail(const std::string& what) {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    error_ = make_error(origin_ + ": line " + std::to_string(line) + ", column " +
                        std::to_string(column) + ": " + what);
    return false;
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool eat(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool value(JsonValue& v, int depth) {
    if (depth > kMaxDepth) return fail("nested too deeply");
    skip_space();
    if (pos_ >= text_.size()) return fail("unexpected end of input");
    char c = text_[pos_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v.kind = JsonValue::Kind::String;
      return string(v.string);
    }
    if (literal("true") || literal("false")) {
      v.kind = JsonValue::Kind::Bool;
      v.boolean = c == 't';
      return true;
    }
    if (literal("null")) return true;
    return number(v);
  }

  bool object(JsonValue& v, int depth) {
    v.kind = JsonValue::Kind::Object;
    ++pos_;
    if (eat('}')) return true;
    do {
      skip_space();
      std::string key;
      if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected a \"key\"");
      if (!string(key)) return false;
      if (!eat(':')) return fail("expected ':'");
      JsonValue member;
      if (!value(member, depth + 1)) return false;
      v.object.emplace_back(std::move(key), std::move(member));
    } while (eat(','));
    if (!eat('}')) return fail("expected ',' or '}'");
    return true;
  }

  bool array(JsonValue& v, int depth) {
    v.kind = JsonValue::Kind::Array;
    ++pos_;
    if (eat(']')) return true;
    do {
      JsonValue item;
      if (!value(item, depth + 1)) return false;
      v.array.push_back(std::move(item));
    } while (eat(','));
    if (!eat(']')) return fail("expected ',' or ']'");
    return true;
  }

  // Keys and names here are ASCII; \u escapes are kept only for code points below 0x80.
  bool string(std::string& out) {
    ++pos_;  // the opening quote
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (pos_ + 4 > text_.size()) return fail("short \\u escape");
          unsigned code = std::strtoul(std::string(text_.substr(pos_, 4)).c_str(), nullptr, 16);
          pos_ += 4;
          out += code < 0x80 ? static_cast<char>(code) : '?';
          break;
        }
        default:
          return fail("bad escape in string");
      }
    }
    return fail("unterminated string");
  }

  bool number(JsonValue& v) {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           std::string_view("+-0123456789.eE").find(text_[pos_]) != std::string_view::npos) {
      ++pos_;
    }
    std::string digits(text_.substr(start, pos_ - start));
    char* end = nullptr;
    v.number = std::strtod(digits.c_str(), &end);
    if (digits.empty() || end != digits.c_str() + digits.size()) {
      pos_ = start;
      return fail("expected a value");
    }
    v.kind = JsonValue::Kind::Number;
    return true;
  }

  std::string_view text_;
  const std::string& origin_;
  size_t pos_ = 0;
  Error error_;
};

Result<double> number_field(const JsonValue& model, std::string_view key,
                            const std::string& where) {
  const JsonValue* v = model.find(key);
  if (!v) return make_error(where + ": missing \"" + std::string(key) + "\"");
  if (v->kind != JsonValue::Kind::Number || !std::isfinite(v->number) || v->number < 0) {
    return make_error(where + ": \"" + std::string(key) + "\" must be a number >= 0");
  }
  return v->number;
}

}  // namespace

Result<Predictions> Predictions::parse(std::string_view json, const std::string& origin) {
  auto doc = JsonParser(json, origin).document();
  if (!doc) return doc.error();
  if (doc->kind != JsonValue::Kind::Object) {
    return make_error(origin +
                      ": expected an object of collectives, e.g. {\"allreduce\": "
                      "{\"latency_s\": 2e-05, \"seconds_per_byte\": 1e-09}}");
  }
  Predictions p;
  for (const auto& [name, model] : doc->object) {
    auto c = parse_collective(name);
    if (!c) continue;  // the model may predict collectives this benchmark does not run
    const std::string where = origin + ": \"" + name + "\"";
    if (model.kind != JsonValue::Kind::Object) {
      return make_error(where + ": expected {\"latency_s\": ..., \"seconds_per_byte\": ...}");
    }
    auto latency = number_field(model, "latency_s", where);
    if (!latency) return latency.error();
    auto per_byte = number_field(model, "seconds_per_byte", where);
    if (!per_byte) return per_byte.error();
    p.models_[*c] = LinearModel{*latency, *per_byte};
  }
  return p;
}

Result<Predictions> Predictions::load(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error().context("reading predictions");
  return parse(*text, path);
}

std::optional<double> Predictions::time_s(Collective c, uint64_t size) const {
  auto it = models_.find(c);
  if (it == models_.end()) return std::nullopt;
  return it->second.latency_s + it->second.seconds_per_byte * static_cast<double>(size);
}

std::optional<double> Predictions::busbw(Collective c, uint64_t size, int ranks) const {
  // No rate on the collective's paths: the model bounds nothing (the CPU sets the speed).
  auto it = models_.find(c);
  if (it == models_.end() || it->second.seconds_per_byte <= 0) return std::nullopt;
  auto t = time_s(c, size);
  if (!t || *t <= 0) return std::nullopt;
  return gb_per_s(size, *t) * bus_factor(c, ranks);
}

}  // namespace fabemu::collective
