// Reading prediction files (JSON through util/json.h) and the linear time model.
#include "collective/prediction.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "util/files.h"
#include "util/json.h"

namespace fabemu::collective {
namespace {

Result<double> number_field(const Json& model, const char* key, const std::string& where) {
  auto v = model.find(key);
  if (v == model.end()) return make_error(where + ": missing \"" + std::string(key) + "\"");
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0)
    return make_error(where + ": \"" + std::string(key) + "\" must be a number >= 0");
  return v->get<double>();
}

}  // namespace

Result<Predictions> Predictions::parse(std::string_view json, const std::string& origin) {
  Json doc;
  try {
    doc = Json::parse(json.begin(), json.end());
  } catch (const Json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 2, column 22: ...": where, then why.
    std::string what = e.what();
    const std::string at = "parse error at ";
    if (const size_t p = what.find(at); p != std::string::npos) what = what.substr(p + at.size());
    return make_error(origin + ": " + what);
  }
  if (!doc.is_object()) {
    return make_error(origin +
                      ": expected an object of collectives, e.g. {\"allreduce\": "
                      "{\"latency_s\": 2e-05, \"seconds_per_byte\": 1e-09}}");
  }
  Predictions p;
  for (const auto& [name, model] : doc.items()) {
    auto c = parse_collective(name);
    if (!c) continue;  // the model may predict collectives this benchmark does not run
    const std::string where = origin + ": \"" + name + "\"";
    if (!model.is_object())
      return make_error(where + ": expected {\"latency_s\": ..., \"seconds_per_byte\": ...}");
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
