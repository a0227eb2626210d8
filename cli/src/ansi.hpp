#pragma once
// ANSI colours, applied only when the caller decided the terminal wants them.
#include <string>

namespace kfleet::cli::ansi {

inline constexpr const char* red = "\x1b[31m";
inline constexpr const char* green = "\x1b[32m";
inline constexpr const char* yellow = "\x1b[33m";
inline constexpr const char* dim = "\x1b[2m";
inline constexpr const char* bold = "\x1b[1m";
inline constexpr const char* reset = "\x1b[0m";

inline std::string paint(const std::string& text, const char* code, bool color) {
  return color ? std::string(code) + text + reset : text;
}

}  // namespace kfleet::cli::ansi
