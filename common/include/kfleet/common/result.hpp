#pragma once
// Expected failures (parse, network, compiler, SQLite constraint) travel as values; broken
// invariants abort. Exceptions do not cross module boundaries.
#include <cassert>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace kfleet {

enum class Errc {
  invalid_argument,  // the caller's input is wrong; the message says what to fix
  not_found,
  conflict,          // e.g. a stale fencing token, a state transition that no longer applies
  unauthorized,
  forbidden,
  too_large,
  unavailable,       // a dependency (network, subprocess) is not there right now; retrying may help
  internal,
};

const char* errc_name(Errc c);

struct Error {
  Errc code = Errc::internal;
  std::string message;
};

inline Error make_error(Errc c, std::string msg) { return Error{c, std::move(msg)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T v) : v_(std::move(v)) {}          // NOLINT(google-explicit-constructor)
  Result(Error e) : v_(std::move(e)) {}      // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { check(); return std::get<0>(v_); }
  const T& value() const& { check(); return std::get<0>(v_); }
  T&& value() && { check(); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const {
    if (ok()) std::abort();
    return std::get<1>(v_);
  }

 private:
  void check() const {
    if (!ok()) std::abort();  // reading a value from a failed Result is a programming error
  }
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    if (ok_) std::abort();
    return err_;
  }

 private:
  Error err_;
  bool ok_ = true;
};

inline Result<void> ok_result() { return {}; }

}  // namespace kfleet
