#pragma once
// A check tests make again and again: a text holds each of several parts.
#include <initializer_list>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace kfleet::testing {

// Each of `parts` is in `text`; a failure names the part and shows the text.
inline void expect_contains(const std::string& text, std::initializer_list<std::string_view> parts) {
  for (const auto part : parts)
    EXPECT_NE(text.find(part), std::string::npos) << "no '" << part << "' in:\n" << text;
}

}  // namespace kfleet::testing
