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
  for (const auto& [type, price] : doc.items()) {
    if (!price.is_number() || price.get<double>() < 0) {
      return make_error(Errc::invalid_argument, "price table: the price of '" + type +
                                                    "' must be a non-negative number of USD per hour");
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
