// Journal file format: one "kind path" line per object, a header, and a final "complete".
#include "apply/journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "util/files.h"
#include "util/unique_fd.h"

namespace fabemu {
namespace {

// Each entry kind's word in the file, for writing and reading alike.
constexpr std::pair<JournalEntry::Kind, std::string_view> kKindNames[] = {
    {JournalEntry::Kind::Mount, "mount"},   {JournalEntry::Kind::Path, "path"},
    {JournalEntry::Kind::Netns, "netns"},   {JournalEntry::Kind::Uts, "uts"},
    {JournalEntry::Kind::Cgroup, "cgroup"}, {JournalEntry::Kind::Pins, "pins"},
    {JournalEntry::Kind::Rdma, "rdma"},
};

std::string_view kind_name(JournalEntry::Kind k) {
  for (const auto& [kind, name] : kKindNames)
    if (kind == k) return name;
  return "?";
}

std::optional<JournalEntry::Kind> kind_of(std::string_view name) {
  for (const auto& [kind, known] : kKindNames)
    if (known == name) return kind;
  return std::nullopt;
}

}  // namespace

constexpr std::string_view kHeader = "fabemu-journal 1\n";

std::string format_journal(const JournalFile& j) {
  std::string out(kHeader);
  out += "lab " + j.lab + "\npool " + std::to_string(j.pool) + "\n";
  if (!j.scenario_file.empty()) out += "scenario " + j.scenario_file + "\n";
  for (const auto& e : j.entries) out += std::string(kind_name(e.kind)) + " " + e.path + "\n";
  // Written in the same write as the entries: without it the write was cut short, and since
  // creation starts only after it returned, nothing was made.
  if (j.planned) out += "planned\n";
  if (j.complete) out += "complete\n";
  return out;
}

Result<JournalFile> parse_journal(const std::string& text, const std::string& path) {
  JournalFile j;
  if (text.size() < kHeader.size()) {
    // A header cut short by a crash: nothing was planned, let alone made.
    if (kHeader.substr(0, text.size()) == text) return j;
    return make_error(path + ": not a fabemu journal");
  }
  if (text.compare(0, kHeader.size(), kHeader) != 0)
    return make_error(path + ": not a fabemu journal");
  std::istringstream in(text.substr(kHeader.size()));
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof() && text.back() != '\n') break;  // a torn last line
    auto sp = line.find(' ');
    std::string key = line.substr(0, sp), val = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "lab")
      j.lab = val;
    else if (key == "pool")
      j.pool = std::atoi(val.c_str());
    else if (key == "scenario")
      j.scenario_file = val;
    else if (key == "planned")
      j.planned = true;
    else if (key == "complete")
      j.complete = true;
    else if (auto kind = kind_of(key))
      j.entries.push_back({*kind, val});
  }
  if (!j.planned) j.entries.clear();
  return j;
}

Result<JournalFile> read_journal(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return parse_journal(*text, path);
}

Result<void> write_journal(const std::string& path, const JournalFile& j) {
  return fabemu::write_file(path, format_journal(j), /*exclusive=*/true);
}

Result<void> mark_journal_complete(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  if (!fd.valid()) return errno_error("opening " + path);
  if (::write(fd.get(), "complete\n", 9) != 9) return errno_error("writing " + path);
  return ok();
}

std::vector<std::string> list_labs(const std::string& run_root) {
  std::vector<std::string> labs;
  DIR* d = ::opendir(run_root.c_str());
  if (!d) return labs;
  while (dirent* e = ::readdir(d))
    if (e->d_type == DT_DIR && e->d_name[0] != '.') labs.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(labs.begin(), labs.end());
  return labs;
}

}  // namespace fabemu
