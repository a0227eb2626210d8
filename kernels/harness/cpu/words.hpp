// Splitting a line of kfleet's own text formats (the launch list, the problem spec) into words.
#pragma once

#include <string>
#include <vector>

namespace kfleet::harness {

// Words are separated by spaces only, as the formats' writers put them: a tab or a carriage
// return is part of a word (and makes it wrong), never a separator.
inline std::vector<std::string> space_words(const std::string& line) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while ((pos = line.find_first_not_of(' ', pos)) != std::string::npos) {
    const std::size_t end = line.find(' ', pos);
    out.push_back(line.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    pos = end;
  }
  return out;
}

}  // namespace kfleet::harness
