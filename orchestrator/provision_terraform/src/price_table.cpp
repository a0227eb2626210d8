#include "kfleet/provision_terraform/price_table.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace kfleet::provision {

Result<PriceTable> PriceTable::parse(std::string_view json_text) {
  nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return make_error(Errc::invalid_argument,
                      "price table must be a JSON object of instance type -> USD per hour, "
                      "e.g. {\"g6.xlarge\": 0.8048}");
  }
  PriceTable table;
  for (const auto& [type, entry] : doc.items()) {
    nlohmann::json price = entry;
    if (entry.is_object()) {
      price = entry.value("usd_per_hour", nlohmann::json());
      if (entry.contains("gpus")) {
        const auto& g = entry["gpus"];
        if (!g.is_number_integer() || g.get<int>() < 1 || g.get<int>() > 64)
          return make_error(Errc::invalid_argument, "price table: the gpus of '" + type +
                                                        "' must be a whole number from 1 to 64");
        table.gpus_.emplace(type, g.get<int>());
      }
    }
    if (!price.is_number() || price.get<double>() < 0) {
      return make_error(Errc::invalid_argument,
                        "price table: the price of '" + type +
                            "' must be a non-negative number of USD per hour (or "
                            "{\"usd_per_hour\": N, \"gpus\": G})");
    }
    table.prices_.emplace(type, price.get<double>());
  }
  return table;
}

Result<PriceTable> PriceTable::load(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    return make_error(Errc::not_found, "cannot read the price table " + file.string());
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto table = parse(text.str());
  if (!table) return make_error(table.error().code, file.string() + ": " + table.error().message);
  return table;
}

std::optional<double> PriceTable::usd_per_hour(std::string_view instance_type) const {
  auto it = prices_.find(instance_type);
  if (it == prices_.end()) return std::nullopt;
  return it->second;
}

int known_gpus_per_instance(std::string_view t) {
  // AWS g6 (L4): 12x and 24x have 4, 48x has 8; GCP g2 (L4): standard-48 has 4, -96 has 8.
  static const std::map<std::string, int, std::less<>> known = {
      {"g6.12xlarge", 4}, {"g6.24xlarge", 4}, {"g6.48xlarge", 8},
      {"g2-standard-24", 2}, {"g2-standard-48", 4}, {"g2-standard-96", 8}};
  auto it = known.find(t);
  return it == known.end() ? 1 : it->second;
}

int PriceTable::gpus_per_instance(std::string_view instance_type) const {
  auto it = gpus_.find(instance_type);
  return it != gpus_.end() ? it->second : known_gpus_per_instance(instance_type);
}

std::optional<double> PriceTable::usd_per_gpu_hour(std::string_view instance_type) const {
  auto rate = usd_per_hour(instance_type);
  if (!rate) return std::nullopt;
  return *rate / gpus_per_instance(instance_type);
}

Result<double> PriceTable::cost_usd(std::string_view instance_type, double seconds) const {
  auto rate = usd_per_hour(instance_type);
  if (!rate) {
    return make_error(Errc::not_found, "the price table has no entry for " +
                                           std::string(instance_type) + "; add its USD per hour");
  }
  if (seconds < 0) return make_error(Errc::invalid_argument, "a duration cannot be negative");
  return *rate * seconds / 3600.0;
}

}  // namespace kfleet::provision
