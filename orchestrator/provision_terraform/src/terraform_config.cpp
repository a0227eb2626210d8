#include <fstream>
#include <sstream>

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "kfleet/provision/terraform.hpp"
#include "kfleet/provision_terraform/aws_error.hpp"

namespace kfleet::provision {
namespace {

// Stands in when the configuration cannot run: provisioning is reported, not silently absent.
class MisconfiguredTerraform final : public Provisioner {
 public:
  MisconfiguredTerraform(boost::asio::any_io_executor ex, std::vector<std::string> regions, std::string why)
      : ex_(std::move(ex)), regions_(std::move(regions)), why_(std::move(why)) {}
  std::string name() const override { return "terraform"; }
  bool can_grow() const override { return false; }
  int capacity_budget() const override { return 0; }
  std::vector<std::string> regions() const override { return regions_; }
  std::vector<std::string> gpu_classes() const override { return {"L4"}; }
  void request(const CapacityRequest&, std::function<void(CapacityResult)> done) override {
    boost::asio::post(ex_, [done = std::move(done), why = why_] { done(CapacityResult{Outcome::fatal, why, {}, 0}); });
  }
  void release(const std::string&, std::function<void(Result<void>)> done) override {
    boost::asio::post(ex_, [done = std::move(done), why = why_] {
      done(Result<void>(make_error(Errc::unavailable, why)));
    });
  }

 private:
  boost::asio::any_io_executor ex_;
  std::vector<std::string> regions_;
  std::string why_;
};

}  // namespace

Result<TerraformConfig> load_terraform_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return make_error(Errc::not_found, "cannot read the terraform config " + file.string());
  std::ostringstream text;
  text << in.rdbuf();
  auto doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return make_error(Errc::invalid_argument, file.string() + " is not a JSON object");
  }
  const std::string where = file.string() + ": ";
  TerraformConfig c;
  try {
    c.terraform_dir = doc.at("terraform_dir").get<std::string>();
    c.state_root = doc.at("state_root").get<std::string>();
    c.regions = doc.at("regions").get<std::vector<std::string>>();
    c.owner = doc.at("owner").get<std::string>();
    c.cost_center = doc.at("cost_center").get<std::string>();
    c.server_url = doc.value("server_url", "");
    c.enrol_token = doc.value("enrol_token", "");
    c.per_instance_enrolment = doc.value("per_instance_enrolment", c.per_instance_enrolment);
    c.server_ca_pem = doc.value("server_ca_pem", "");
    c.terraform_binary = doc.value("terraform_binary", c.terraform_binary);
    c.plugin_dir = doc.value("plugin_dir", "");
    c.instance_type = doc.value("instance_type", c.instance_type);
    c.capacity_budget = doc.value("capacity_budget", c.capacity_budget);
    c.aws_max_retries = doc.value("aws_max_retries", c.aws_max_retries);
    c.apply_budget_s = doc.value("apply_budget_s", c.apply_budget_s);
    c.vars = doc.value("vars", std::map<std::string, std::string>{});
    c.env = doc.value("env", std::map<std::string, std::string>{});
  } catch (const nlohmann::json::exception& e) {
    // The library's words name the missing key or the wrong type.
    return make_error(Errc::invalid_argument, where + e.what());
  }
  if (doc.contains("price_table")) {
    auto prices = PriceTable::load(doc["price_table"].get<std::string>());
    if (!prices) return make_error(prices.error().code, where + prices.error().message);
    c.prices = std::move(prices.value());
  }
  return c;
}

ProvisionerPtr make_terraform_provisioner(boost::asio::any_io_executor control_plane, TerraformConfig config) {
  auto regions = config.regions;
  auto p = make_terraform_provisioner(std::move(config), control_plane, std::make_shared<SystemClock>());
  if (!p) return std::make_unique<MisconfiguredTerraform>(control_plane, regions, p.error().message);
  return std::move(p.value());
}

}  // namespace kfleet::provision
