#include "kfleet/common/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "kfleet/common/clock.hpp"

namespace kfleet::log {
namespace {

Level initial_level() {
  const char* e = std::getenv("KFLEET_LOG");
  if (!e) return Level::info;
  if (!std::strcmp(e, "debug")) return Level::debug;
  if (!std::strcmp(e, "warn")) return Level::warn;
  if (!std::strcmp(e, "error")) return Level::error;
  return Level::info;
}
Level g_level = initial_level();
std::mutex g_mu;

}  // namespace

Level level() { return g_level; }
void set_level(Level l) { g_level = l; }

void write(Level l, std::string_view component, std::string_view msg) {
  static const char* names[] = {"debug", "info", "warn", "error"};
  std::string ts = format_iso8601(SystemClock().now_ms());
  std::lock_guard lk(g_mu);
  std::fprintf(stderr, "%s %-5s [%.*s] %.*s\n", ts.c_str(), names[static_cast<int>(l)],
               static_cast<int>(component.size()), component.data(), static_cast<int>(msg.size()),
               msg.data());
}

}  // namespace kfleet::log
