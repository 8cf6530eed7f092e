// Result<T>: an expected-style value-or-error used for every recoverable failure.
#pragma once

#include <cerrno>
#include <source_location>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace fabemu {

struct Error {
  std::error_code code;
  std::string message;  // with context: "creating veth leaf1-eth3: File exists"
  std::source_location where;

  // "message: strerror" when there is an errno, else just the message (also when the code's
  // category has no words for it: the session's kinds of failure).
  std::string what() const {
    if (!code) return message;
    if (std::string words = code.message(); words.empty()) return message;
    return message + ": " + code.message();
  }
  // Adds outer context: "bringing up lab demo: " + inner.
  Error context(const std::string& outer) const {
    Error e = *this;
    e.message = outer + ": " + message;
    return e;
  }
};

inline Error make_error(std::string message, int err = 0,
                        std::source_location where = std::source_location::current()) {
  return Error{err ? std::error_code(err, std::generic_category()) : std::error_code{},
               std::move(message), where};
}

// The current errno, captured at the call site.
inline Error errno_error(std::string message,
                         std::source_location where = std::source_location::current()) {
  return make_error(std::move(message), errno, where);
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

inline Result<void> ok() {
  return {};
}

// The errno inside an error, 0 when it has none.
inline int errno_of(const Error& e) {
  return e.code ? e.code.value() : 0;
}

}  // namespace fabemu

// Propagates an error from an expression returning Result<...>.
#define FABEMU_TRY(expr)                              \
  do {                                                \
    auto fabemu_try_r_ = (expr);                      \
    if (!fabemu_try_r_) return fabemu_try_r_.error(); \
  } while (0)
