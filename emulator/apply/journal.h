// Journal: the on-disk record of what a lab leaves on the system, written before creation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.h"
#include "util/result.h"

namespace fabemu {

struct JournalFile {
  std::string lab;
  int pool = -1;
  std::string scenario_file;  // where the user's scenario came from (for status)
  std::vector<JournalEntry> entries;
  bool planned = false;   // the entries were written whole: creation may have begun
  bool complete = false;  // `up` finished
};

std::string format_journal(const JournalFile& j);
Result<JournalFile> parse_journal(const std::string& text, const std::string& path);
Result<JournalFile> read_journal(const std::string& path);

// Creates the journal exclusively (a second `up` of the same lab fails with EEXIST).
Result<void> write_journal(const std::string& path, const JournalFile& j);
Result<void> mark_journal_complete(const std::string& path);

// Labs recorded under run_root (directory names that hold a journal or are left-overs).
std::vector<std::string> list_labs(const std::string& run_root);

}  // namespace fabemu
