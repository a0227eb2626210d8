#pragma once
// On-demand prices per instance type, so that every provisioning attempt and every release can
// say what the GPU hours cost. Loaded from JSON: {"g6.xlarge": 0.8048, ...} in USD per hour, or
// {"g6.48xlarge": {"usd_per_hour": 13.35, "gpus": 8}} for a multi-GPU type. An instance-hour is
// split across its GPUs: a job holds one GPU (one agent slot), so it pays one GPU's share.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kfleet/common/result.hpp"

namespace kfleet::provision {

// The GPU count of well-known multi-GPU instance types (1 for any other type).
int known_gpus_per_instance(std::string_view instance_type);

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
  // GPUs per instance of the type: the table's "gpus", else the known count of the AWS g6 and
  // GCP g2 types (g6.48xlarge: 8, g2-standard-96: 8, ...), else 1.
  int gpus_per_instance(std::string_view instance_type) const;
  // USD per GPU-hour: an instance-hour split across its GPUs.
  std::optional<double> usd_per_gpu_hour(std::string_view instance_type) const;

 private:
  std::map<std::string, double, std::less<>> prices_;
  std::map<std::string, int, std::less<>> gpus_;
};

}  // namespace kfleet::provision
