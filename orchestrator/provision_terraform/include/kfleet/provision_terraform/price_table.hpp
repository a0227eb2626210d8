#pragma once
// On-demand prices per instance type, so that every provisioning attempt and every release can
// say what the GPU hours cost. Loaded from JSON: {"g6.xlarge": 0.8048, ...} in USD per hour.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kfleet/common/result.hpp"

namespace kfleet::provision {

class PriceTable {
 public:
  // Parses {"<instance type>": <USD per hour>, ...}; rejects negative or non-numeric prices.
  static Result<PriceTable> parse(std::string_view json_text);
  static Result<PriceTable> load(const std::filesystem::path& file);

  // USD per hour for the type, or nullopt when the table does not list it.
  std::optional<double> usd_per_hour(std::string_view instance_type) const;
  // Cost of `seconds` of one instance; an error names the missing type.
  Result<double> cost_usd(std::string_view instance_type, double seconds) const;
  std::size_t size() const { return prices_.size(); }

 private:
  std::map<std::string, double, std::less<>> prices_;
};

}  // namespace kfleet::provision
