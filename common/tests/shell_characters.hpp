#pragma once
// Every character kernel.flags, kernel.defines and kernel.entry may not hold (issue 49, point 3):
// what a POSIX shell gives meaning to inside or outside double quotes (and what common shells
// add), whitespace, control characters and a few that are not ASCII. One list for the parser's,
// the CLI's, kfleetd's and the agent's tests, so each refuses every one of them.
#include <string>
#include <vector>

namespace kfleet::testing {

struct Refused {
  std::string raw;    // the character itself (UTF-8)
  std::string yaml;   // how a double-quoted YAML scalar writes it
  std::string shown;  // how the message shows it
  std::string why;    // what a shell does with it
};

// Every character a POSIX shell gives meaning to inside or outside double quotes (and those
// common shells add), whitespace, control characters and a few that are not ASCII.
inline const std::vector<Refused>& refused_shell_characters() {
  static const std::vector<Refused> list = {
      {"$", "$", "U+0024 '$'", "a shell expands, even inside double quotes"},
      {"`", "`", "U+0060 '`'", "a shell runs as a command, even inside double quotes"},
      {"\\", "\\\\", "U+005C '\\'", "a shell takes as an escape, even inside double quotes"},
      {"\"", "\\\"", "U+0022 '\"'", "ends a shell's double quotes"},
      {"!", "!", "U+0021 '!'", "bash and csh expand from their history, even inside double quotes"},
      {"'", "'", "U+0027 (a single quote)", "starts a shell's single quotes"},
      {";", ";", "U+003B ';'", "is a shell operator"},
      {"&", "&", "U+0026 '&'", "is a shell operator"},
      {"|", "|", "U+007C '|'", "is a shell operator"},
      {"<", "<", "U+003C '<'", "is a shell operator"},
      {">", ">", "U+003E '>'", "is a shell operator"},
      {"(", "(", "U+0028 '('", "is a shell operator"},
      {")", ")", "U+0029 ')'", "is a shell operator"},
      {"*", "*", "U+002A '*'", "a shell matches against file names"},
      {"?", "?", "U+003F '?'", "a shell matches against file names"},
      {"[", "[", "U+005B '['", "a shell matches against file names"},
      {"]", "]", "U+005D ']'", "a shell matches against file names"},
      {"{", "{", "U+007B '{'", "bash, ksh and zsh expand (brace expansion)"},
      {"}", "}", "U+007D '}'", "bash, ksh and zsh expand (brace expansion)"},
      {"#", "#", "U+0023 '#'", "starts a shell comment"},
      {"~", "~", "U+007E '~'", "a shell expands to a home directory"},
      {"^", "^", "U+005E '^'", "is a pipe to the Bourne shell and a pattern to zsh"},
      {" ", " ", "U+0020 (a space)", "splits shell words"},
      {"\t", "\\t", "U+0009 (a tab)", "splits shell words"},
      {"\n", "\\n", "U+000A (a newline)", "ends a shell command"},
      {"\r", "\\r", "U+000D", "is a control character"},
      {"\x01", "\\x01", "U+0001", "is a control character"},
      {"\x1b", "\\e", "U+001B", "is a control character"},
      {"\x7f", "\\x7f", "U+007F", "is a control character"},
      {"\xC2\x85", "\\u0085", "U+0085", "is a control character"},
      {"\xC3\xA9", "\\u00e9", "U+00E9", "is not ASCII"},
      {"\xE2\x80\xA8", "\\u2028", "U+2028", "is not ASCII"},
      {"\xEF\xBC\x84", "\\uff04", "U+FF04", "is not ASCII"},
  };
  return list;
}

}  // namespace kfleet::testing
