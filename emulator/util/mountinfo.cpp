// mountinfo parsing (proc(5)): the optional fields before " - " vary in number, so the line is
// split there first; paths escape space, tab, newline and backslash as \ooo.
#include "util/mountinfo.h"

#include <fstream>
#include <sstream>

namespace fabemu {
namespace {

std::string unescape(const std::string& s) {
  std::string out;
  auto octal = [&](size_t j) { return j < s.size() && s[j] >= '0' && s[j] <= '7'; };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> split_list(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

std::vector<MountInfo> read_mountinfo() {
  std::vector<MountInfo> mounts;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::vector<std::string> before = split_list(line.substr(0, dash), ' ');
    std::vector<std::string> after = split_list(line.substr(dash + 3), ' ');
    if (before.size() < 5 || after.size() < 3) continue;
    mounts.push_back({unescape(before[4]), after[0], after[1], after[2]});
  }
  return mounts;
}

}  // namespace fabemu
