// What a destructor could not undo (it cannot return an error): said through the handler the
// front end installs (the CLI prints it on stderr), so that no layer below the CLI prints.
#pragma once

#include <functional>
#include <string>

namespace fabemu {

// Without a handler the failure is dropped: the objects' owners (journals) still list what
// was left, and `down` removes it.
void set_cleanup_failure_handler(std::function<void(const std::string&)> handler);
void report_cleanup_failure(const std::string& what);

}  // namespace fabemu
