// kfleetd's provisioner factory (kfleetd_provisioners.hpp).
#include "kfleetd_provisioners.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "kfleet/provision/multi_provisioner.hpp"
#include "kfleet/provision/simulated_cloud.hpp"
#ifdef KFLEET_HAVE_TERRAFORM
#include "kfleet/provision/terraform.hpp"
#endif
#ifdef KFLEET_HAVE_GCE
#include "kfleet/provision_gce/gce_provisioner.hpp"
#endif

namespace kfleetd {

namespace fs = std::filesystem;

namespace {

// kfleet-agent beside kfleetd (or in the build tree's agent/), else the name, for PATH.
std::string find_agent_binary(const std::string& argv0) {
  std::error_code ec;
  fs::path me = fs::canonical(fs::path(argv0), ec);
  if (!ec) {
    for (auto cand : {me.parent_path() / "kfleet-agent",
                      me.parent_path().parent_path().parent_path() / "agent" / "kfleet-agent"})
      if (fs::exists(cand)) return cand.string();
  }
  return "kfleet-agent";  // from PATH
}

}  // namespace

ProvisionerPtr build_provisioner(const ProvisionerEnv& env, const std::string& kind,
                                 const nlohmann::json& inline_cfg, const std::string& file) {
  auto read_json = [&](nlohmann::json& out) -> bool {
    if (!inline_cfg.is_null()) { out = inline_cfg; return true; }
    try {
      out = nlohmann::json::parse(std::ifstream(file));
    } catch (const std::exception& e) {
      std::cerr << "kfleetd: cannot read " << file << ": " << e.what() << "\n";
      return false;
    }
    return true;
  };
  if (kind == "static") return kfleet::provision::make_static_provisioner();
  if (kind == "simulated") {
    // What kfleetd knows itself (its URL, the enrolment token, where kfleet-agent is) is
    // filled in before the config is checked; the file only describes the cloud.
    nlohmann::json raw;
    if (!read_json(raw)) return nullptr;
    if (!raw.is_object()) {
      std::cerr << "kfleetd: " << file << " must hold a JSON object\n";
      return nullptr;
    }
    raw["server_url"] = env.url;
    if (!raw.contains("enrol_token")) raw["enrol_token"] = env.enrol_token;
    if (!raw.contains("server_ca_pem") && env.tls) raw["server_ca_pem"] = env.agent_ca_pem;
    if (!raw.contains("agent_binary"))
      raw["agent_binary"] = env.agent_binary.empty() ? find_agent_binary(env.argv0) : env.agent_binary;
    if (!raw.contains("work_root"))
      raw["work_root"] = ((env.postgres ? fs::current_path() : fs::path(env.db).parent_path()) /
                          "simulated-cloud")
                             .string();
    auto sc = kfleet::provision::simulated_cloud_config_from_json(raw);
    if (!sc) {
      std::cerr << "kfleetd: " << file << ": " << sc.error().message << "\n";
      return nullptr;
    }
    return kfleet::provision::make_simulated_cloud(env.io.get_executor(), *sc);
  }
  if (kind == "terraform") {
#ifdef KFLEET_HAVE_TERRAFORM
    auto tc = kfleet::provision::load_terraform_config(file);
    if (!tc) {
      std::cerr << "kfleetd: " << tc.error().message << "\n";
      return nullptr;
    }
    // Cloud agents need an address they can reach; only a config without one gets ours.
    if (tc->server_url.empty()) tc->server_url = env.url;
    if (tc->enrol_token.empty()) tc->enrol_token = env.enrol_token;
    // Each new slot gets its own enrolment token (one use per GPU); AWS names the instance only
    // once it exists, so it is bound by slot and count, not by instance id.
    if (tc->per_instance_enrolment && env.mint_enrol_token)
      tc->mint_enrol_token = [mint = env.mint_enrol_token](const std::string& slot, int uses) {
        return mint("terraform slot " + slot, uses, "");
      };
    if (tc->server_ca_pem.empty()) tc->server_ca_pem = env.agent_ca_pem;
    return kfleet::provision::make_terraform_provisioner(env.io.get_executor(), *tc);
#else
    std::cerr << "kfleetd: this build has no terraform provisioner\n";
    return nullptr;
#endif
  }
  if (kind == "gce") {
#ifdef KFLEET_HAVE_GCE
    nlohmann::json raw;
    if (!read_json(raw)) return nullptr;
    auto gc = kfleet::provision::gce_config_from_json(raw);
    if (!gc) {
      std::cerr << "kfleetd: " << file << ": " << gc.error().message << "\n";
      return nullptr;
    }
    if (gc->server_url.empty()) gc->server_url = env.url;
    if (gc->enrol_token.empty()) gc->enrol_token = env.enrol_token;
    if (gc->server_ca_pem.empty()) gc->server_ca_pem = env.agent_ca_pem;
    // Each instance gets its own single-use (per GPU), instance-bound enrolment token; the
    // fleet's long-lived one then never lands in any instance's metadata.
    if (gc->per_instance_enrolment && env.mint_enrol_token)
      gc->mint_enrol_token = [mint = env.mint_enrol_token](const std::string& instance, int uses) {
        return mint("instance " + instance, uses, instance);
      };
    return kfleet::provision::make_gce_provisioner_or_explain(*gc, env.io.get_executor());
#else
    std::cerr << "kfleetd: this build has no gce provisioner\n";
    return nullptr;
#endif
  }
  std::cerr << "kfleetd: unknown provisioner kind '" << kind
            << "' (static, simulated, terraform, gce)\n";
  return nullptr;
}

bool configure_provisioner(const ProvisionerChoice& choice, const ProvisionerEnv& env,
                           ProvisionerSlot& slot) {
  const std::string& provisioner = choice.kind;
  if (provisioner == "simulated" || provisioner == "terraform" || provisioner == "gce") {
    const std::string& file = provisioner == "simulated" ? choice.sim_cloud_file
                              : provisioner == "terraform" ? choice.tf_config : choice.gce_config;
    if (file.empty()) {
      std::cerr << "kfleetd: --provisioner " << provisioner << " needs --"
                << (provisioner == "simulated" ? "simulated-cloud" : provisioner + "-config") << " FILE\n";
      return false;
    }
    auto p = build_provisioner(env, provisioner, nullptr, file);
    if (!p) return false;
    slot.set(std::move(p));
  } else if (provisioner == "multi") {
    // {"provisioners": [{"kind": "gce", "config_file": "gce.json"}, {"kind": "terraform",
    // "config_file": "tf.json"}, ...]}: each serves the regions or zones its config lists.
    const std::string& multi_config = choice.multi_config;
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(std::ifstream(multi_config));
    } catch (const std::exception& e) {
      std::cerr << "kfleetd: --provisioner multi needs --multi-config FILE; cannot read '" << multi_config
                << "': " << e.what() << "\n";
      return false;
    }
    if (!doc.is_object() || !doc.contains("provisioners") || !doc["provisioners"].is_array() ||
        doc["provisioners"].empty()) {
      std::cerr << "kfleetd: " << multi_config
                << " must hold {\"provisioners\": [{\"kind\": \"gce\", \"config_file\": \"...\"}, ...]}\n";
      return false;
    }
    std::vector<ProvisionerPtr> members;
    const fs::path base = fs::path(multi_config).parent_path();
    for (const auto& m : doc["provisioners"]) {
      if (!m.is_object() || !m.contains("kind") || !m["kind"].is_string()) {
        std::cerr << "kfleetd: " << multi_config << ": each provisioner needs a \"kind\"\n";
        return false;
      }
      std::string file = m.value("config_file", "");
      if (!file.empty() && fs::path(file).is_relative()) file = (base / file).string();
      nlohmann::json inline_cfg = m.contains("config") ? m["config"] : nlohmann::json();
      const std::string kind = m["kind"];
      if (kind != "static" && file.empty() && inline_cfg.is_null()) {
        std::cerr << "kfleetd: " << multi_config << ": the " << kind
                  << " provisioner needs \"config_file\" or \"config\"\n";
        return false;
      }
      if (kind == "terraform" && file.empty()) {
        std::cerr << "kfleetd: " << multi_config << ": the terraform provisioner needs \"config_file\"\n";
        return false;
      }
      auto p = build_provisioner(env, kind, inline_cfg, file);
      if (!p) return false;
      members.push_back(std::move(p));
    }
    slot.set(kfleet::provision::make_multi_provisioner(std::move(members)));
  }
  return true;
}

}  // namespace kfleetd
