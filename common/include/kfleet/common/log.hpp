#pragma once
// A small leveled logger to stderr. KFLEET_LOG=debug|info|warn|error sets the level.
#include <sstream>
#include <string_view>

namespace kfleet::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

Level level();
void set_level(Level l);
void write(Level l, std::string_view component, std::string_view msg);

template <class... A>
void emit(Level l, std::string_view component, const A&... a) {
  if (l < level()) return;
  std::ostringstream os;
  (os << ... << a);
  write(l, component, os.str());
}
template <class... A> void debug(std::string_view c, const A&... a) { emit(Level::debug, c, a...); }
template <class... A> void info(std::string_view c, const A&... a) { emit(Level::info, c, a...); }
template <class... A> void warn(std::string_view c, const A&... a) { emit(Level::warn, c, a...); }
template <class... A> void error(std::string_view c, const A&... a) { emit(Level::error, c, a...); }

}  // namespace kfleet::log
