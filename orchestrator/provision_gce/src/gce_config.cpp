// The gce provisioner's config file, its checks, and what it sends: the startup script and
// the instances.insert body.
#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "kfleet/common/pem.hpp"
#include "kfleet/provision_gce/gce_error.hpp"
#include "kfleet/provision_gce/gce_provisioner.hpp"

namespace kfleet::provision {

namespace {

// Compute Engine label values: lower-case letters, digits, '_' and '-', at most 63.
bool label_value_ok(const std::string& v) {
  static const std::regex re("^[a-z0-9_-]{0,63}$");
  return std::regex_match(v, re);
}
bool label_key_ok(const std::string& k) {
  static const std::regex re("^[a-z][a-z0-9_-]{0,62}$");
  return std::regex_match(k, re);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Result<GceConfig> gce_config_from_json(const nlohmann::json& doc) {
  if (!doc.is_object()) return make_error(Errc::invalid_argument, "the gce config must be a JSON object");
  GceConfig c;
  try {
    c.project = doc.at("project").get<std::string>();
    c.zones = doc.at("zones").get<std::vector<std::string>>();
    c.owner = doc.at("owner").get<std::string>();
    c.cost_center = doc.at("cost_center").get<std::string>();
    c.machine_type = doc.value("machine_type", c.machine_type);
    c.gpu_class = doc.value("gpu_class", c.gpu_class);
    c.arch = doc.value("arch", c.arch);
    c.accelerator_type = doc.value("accelerator_type", c.accelerator_type);
    c.accelerator_count = doc.value("accelerator_count", c.accelerator_count);
    c.image_project = doc.value("image_project", c.image_project);
    c.image_family = doc.value("image_family", c.image_family);
    c.boot_disk_gb = doc.value("boot_disk_gb", c.boot_disk_gb);
    c.boot_disk_type = doc.value("boot_disk_type", c.boot_disk_type);
    c.network = doc.value("network", c.network);
    c.subnetwork = doc.value("subnetwork", c.subnetwork);
    c.external_ip = doc.value("external_ip", c.external_ip);
    c.service_account_email = doc.value("service_account_email", c.service_account_email);
    c.name_prefix = doc.value("name_prefix", c.name_prefix);
    c.server_url = doc.value("server_url", c.server_url);
    c.enrol_token = doc.value("enrol_token", c.enrol_token);
    c.per_instance_enrolment = doc.value("per_instance_enrolment", c.per_instance_enrolment);
    c.server_ca_pem = doc.value("server_ca_pem", c.server_ca_pem);
    if (doc.contains("agent_download_url") || doc.contains("agent_sha256"))
      return make_error(Errc::invalid_argument,
                        "gce config: agent_download_url and agent_sha256 (a bare kfleet-agent binary) "
                        "are replaced by agent_packages: [{\"url\": ..., \"sha256\": ...}], one "
                        "entry each for the kfleet-agent and kfleet-kernels .deb files (cpack -G DEB)");
    for (const auto& p : doc.value("agent_packages", nlohmann::json::array()))
      c.agent_packages.push_back({p.at("url").get<std::string>(), p.at("sha256").get<std::string>()});
    c.python_packages = doc.value("python_packages", c.python_packages);
    c.labels = doc.value("labels", c.labels);
    c.capacity_budget = doc.value("capacity_budget", c.capacity_budget);
    c.credentials_file = doc.value("credentials_file", c.credentials_file);
    c.token_url = doc.value("token_url", c.token_url);
    c.api_endpoint = doc.value("api_endpoint", c.api_endpoint);
    c.poll_interval = std::chrono::milliseconds(doc.value("poll_interval_ms", c.poll_interval.count()));
    c.operation_timeout = std::chrono::milliseconds(doc.value("operation_timeout_ms", c.operation_timeout.count()));
    c.http_attempts = doc.value("http_attempts", c.http_attempts);
    c.retry_base = std::chrono::milliseconds(doc.value("retry_base_ms", c.retry_base.count()));
    c.prices = doc.value("prices", c.prices);
  } catch (const nlohmann::json::exception& e) {
    return make_error(Errc::invalid_argument, std::string("gce config: ") + e.what());
  }
  return c;
}

Result<GceConfig> load_gce_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return make_error(Errc::not_found, "cannot read the gce config " + file.string());
  std::ostringstream text;
  text << in.rdbuf();
  auto doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_discarded()) return make_error(Errc::invalid_argument, file.string() + " is not JSON");
  auto c = gce_config_from_json(doc);
  if (!c) return make_error(c.error().code, file.string() + ": " + c.error().message);
  return c;
}

std::optional<std::string> gce_config_problem(const GceConfig& c) {
  static const std::regex zone_re("^[a-z]+-[a-z]+[0-9]+-[a-z]$");
  static const std::regex name_re("^[a-z]([-a-z0-9]{0,20})$");
  static const std::regex url_re("^https?://[A-Za-z0-9.:/_~%+-]+$");
  static const std::regex token_re("^[A-Za-z0-9._~+/=-]{16,}$");
  static const std::regex simple_re("^[A-Za-z0-9._/-]+$");
  if (c.project.empty()) return "project is empty: name the Google Cloud project (e.g. my-gpu-project)";
  if (c.zones.empty()) return "zones is empty: list the zones to provision in, e.g. [\"us-central1-a\"]";
  for (const auto& z : c.zones)
    if (!std::regex_match(z, zone_re)) return "zone '" + z + "' is not a Compute Engine zone name like us-central1-a";
  if (!std::regex_match(c.name_prefix, name_re))
    return "name_prefix '" + c.name_prefix + "' must be lower-case letters, digits and '-', starting with a letter";
  for (const auto* v : {&c.machine_type, &c.image_project, &c.image_family, &c.boot_disk_type, &c.network})
    if (!std::regex_match(*v, simple_re)) return "'" + *v + "' is not a plain Compute Engine resource name";
  if (!c.server_url.empty() && !std::regex_match(c.server_url, url_re))
    return "server_url '" + c.server_url + "' must be a plain http(s) URL agents can reach";
  if (!c.enrol_token.empty() && !std::regex_match(c.enrol_token, token_re))
    return "the enrolment token must be 16 or more characters of [A-Za-z0-9._~+/=-] (e.g. openssl rand -hex 24)";
  if (!c.server_ca_pem.empty())
    if (auto why = pem_certificates_problem(c.server_ca_pem); !why.empty())
      return "server_ca_pem must be the PEM CA certificate that signed kfleetd's (kfleetd --agent-ca-file): " + why;
  for (const auto& p : c.agent_packages) {
    if (!std::regex_match(p.url, url_re))
      return "agent_packages: url '" + p.url + "' must be a plain http(s) URL (no spaces, quotes or shell characters)";
    if (!std::regex_match(p.sha256, std::regex("^[0-9a-f]{64}$")))
      return "agent_packages: " + p.url + " needs its sha256 (64 lower-case hex digits of sha256sum FILE.deb)";
  }
  static const std::regex pip_re("^[A-Za-z0-9][A-Za-z0-9._=<>!~+-]*$");
  for (const auto& p : c.python_packages)
    if (!std::regex_match(p, pip_re))
      return "python_packages: '" + p + "' is not a plain pip requirement such as torch or "
             "triton==3.5.0 (no spaces, quotes or shell characters)";
  for (const auto* v : {&c.owner, &c.cost_center})
    if (v->empty() || !label_value_ok(*v))
      return "owner and cost_center become labels: lower-case letters, digits, '_' and '-', 1 to 63 characters ('" +
             *v + "')";
  for (const auto& [k, v] : c.labels)
    if (!label_key_ok(k) || !label_value_ok(v)) return "label " + k + "=" + v + " is not a valid Compute Engine label";
  if (c.capacity_budget < 1) return "capacity_budget must be at least 1";
  if (c.http_attempts < 1) return "http_attempts must be at least 1";
  if (c.poll_interval.count() < 1 || c.operation_timeout.count() < 1) return "poll_interval_ms and operation_timeout_ms must be positive";
  for (const auto& [type, price] : c.prices)
    if (price < 0) return "the price of " + type + " must be a non-negative USD per hour";
  return std::nullopt;
}

int gce_gpus_per_instance(const GceConfig& c) {
  const std::string& t = c.machine_type;
  if (t == "g2-standard-24") return 2;
  if (t == "g2-standard-48") return 4;
  if (t == "g2-standard-96") return 8;
  return std::max(c.accelerator_count, 1);
}

std::string gce_startup_script(const GceConfig& c, const std::string& zone,
                               const std::string& enrol_token) {
  const int gpus = gce_gpus_per_instance(c);
  std::ostringstream s;
  s << "#!/bin/bash\n"
       "# kfleet agent bootstrap on Compute Engine (written by kfleetd's gce provisioner). Runs as root at\n"
       "# every boot; installs once.\n"
       "set -euo pipefail\n"
       "if systemctl is-enabled --quiet kfleet-agent@0.service 2>/dev/null; then exit 0; fi\n"
       "export DEBIAN_FRONTEND=noninteractive\n"
       "md=http://metadata.google.internal/computeMetadata/v1/instance\n"
       "instance_name=$(curl -sf -H 'Metadata-Flavor: Google' \"$md/name\")\n\n";
  s << "# The agent: its Debian packages (kfleet-agent, kfleet-kernels; apt brings what they depend on,\n"
       "# bubblewrap among them), each checked against its SHA-256, or already in the image.\n";
  if (!c.agent_packages.empty()) {
    s << "debs=$(mktemp -d)\n";
    int i = 0;
    for (const auto& p : c.agent_packages) {
      const std::string f = "\"$debs/" + std::to_string(++i) + ".deb\"";
      s << "curl -fsSL --retry 5 -o " << f << " '" << p.url << "'\n"
        << "echo '" << p.sha256 << "  '" << f << " | sha256sum -c -\n";
    }
    s << "apt-get update -q || echo 'kfleet: apt-get update failed: installing from the lists the image has' >&2\n"
         "apt-get install -y -q -o Dpkg::Options::=--force-confold \"$debs\"/*.deb\n"
         "rm -rf \"$debs\"\n";
  }
  s << "command -v kfleet-agent >/dev/null ||\n"
       "  { echo 'kfleet-agent is not installed: set agent_packages or bake its packages into the image' >&2; exit 1; }\n\n"
       "# A CUDA toolkit for building jobs, when the image has none: NVIDIA's cuda-toolkit (its apt\n"
       "# repository configured in the image), else the distribution's nvidia-cuda-toolkit. Without one\n"
       "# kfleet-agent --check below says so, and the agents do not start.\n"
       "if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then\n"
       "  apt-get install -y -q cuda-toolkit || apt-get install -y -q nvidia-cuda-toolkit ||\n"
       "    echo 'kfleet: no CUDA toolkit could be installed (nvcc): bake one into the image' >&2\n"
       "fi\n\n";
  s << "# The token lives only in the 0600 enrol.token, read by the agent itself (--enrol-token-file),\n"
       "# never in its environment; the CA that signed kfleetd's certificate in another, which the\n"
       "# agent verifies kfleetd with (KFLEET_CA_FILE is its --ca-file). agent.env replaces the\n"
       "# package's commented default.\n"
       "install -d -m 0755 /etc/kfleet\n"
       "umask 077\n";
  if (!c.server_ca_pem.empty()) {
    std::string pem = c.server_ca_pem;
    while (!pem.empty() && (pem.back() == '\n' || pem.back() == '\r')) pem.pop_back();
    s << "cat > /etc/kfleet/ca.pem <<'PEM'\n" << pem << "\nPEM\n"
      << "chmod 0600 /etc/kfleet/ca.pem\n";
  }
  s << "cat > /etc/kfleet/agent.env <<ENV\n"
       "KFLEET_SERVER=" << c.server_url << "\n"
       "KFLEET_REGION=" << zone << "\n"
       "KFLEET_BACKEND=cuda\n"
       "KFLEET_PROVIDER=gce\n"
       "KFLEET_INSTANCE_ID=$instance_name\n"
       "KFLEET_NAME=$instance_name\n"
       "KFLEET_HOST_ID=$instance_name\n";
  if (!c.server_ca_pem.empty()) s << "KFLEET_CA_FILE=/etc/kfleet/ca.pem\n";
  if (!c.python_packages.empty()) s << "KFLEET_PYTHON=/opt/kfleet-python/bin/python3\n";
  s << "ENV\n"
       "chmod 0600 /etc/kfleet/agent.env\n"
       "cat > /etc/kfleet/enrol.token <<'TOKEN'\n"
    << (enrol_token.empty() ? c.enrol_token : enrol_token) << "\nTOKEN\n"
       "chmod 0600 /etc/kfleet/enrol.token\n"
       "umask 022\n\n";
  if (!c.python_packages.empty()) {
    std::string pkgs, quoted;
    for (const auto& p : c.python_packages) {
      pkgs += (pkgs.empty() ? "" : " ") + p;
      quoted += (quoted.empty() ? "'" : " '") + p + "'";
    }
    s << "# Python kernels (kernels/harness/PYTHON.md): a venv with torch and triton, which the agents record\n"
         "# Triton and torch kernels with (KFLEET_PYTHON above), made before they start (each finds its\n"
         "# Python once, at start). If it cannot be made the agents still run CUDA jobs: each reports what\n"
         "# its Python lacks, and kfleetd sends it no Triton or torch job.\n"
         "py_venv=/opt/kfleet-python\n"
         "if [ ! -x \"$py_venv/bin/pip\" ]; then\n"
         "  python3 -m venv --clear \"$py_venv\" 2>/dev/null ||\n"
         "    { apt-get install -y -q python3-venv && python3 -m venv --clear \"$py_venv\"; } || true\n"
         "fi\n"
         "if [ -x \"$py_venv/bin/pip\" ] && \"$py_venv/bin/pip\" install --quiet --no-cache-dir " << quoted << "; then\n"
         "  echo \"kfleet: Python kernels: $(\"$py_venv/bin/python3\" -c 'import torch, triton; print(\"torch\", "
         "torch.__version__, \"triton\", triton.__version__)' 2>&1)\"\n"
         "else\n"
         "  echo \"kfleet: no venv with " << pkgs << " in $py_venv: these agents run CUDA jobs only\" >&2\n"
         "fi\n\n";
  }
  s << "# What this host can do, on the serial console (the units say it again in the journal before\n"
       "# each start; the first also builds the measuring process into GPU 0's build cache).\n"
       "(set -a; . /etc/kfleet/agent.env; set +a\n"
       " kfleet-agent --check --server \"$KFLEET_SERVER\" --backend \"$KFLEET_BACKEND\" \\\n"
       "   --enrol-token-file /etc/kfleet/enrol.token --gpu 0 --work-dir /var/lib/kfleet-agent/gpu0) ||\n"
       "  echo 'kfleet: kfleet-agent --check: this agent can take no job yet (above: what to install)' >&2\n\n"
       "# One agent per GPU: kfleet-agent@0 .. kfleet-agent@" << gpus - 1 << " (the package's units), each\n"
       "# pinned to its GPU (--gpu N) and grouped by the instance name (--host-id).\n"
       "systemctl daemon-reload\n"
       "for gpu in $(seq 0 " << gpus - 1 << "); do\n"
       "  systemctl enable --now \"kfleet-agent@$gpu.service\"\n"
       "done\n";
  return s.str();
}

nlohmann::json gce_instance_body(const GceConfig& c, const std::string& zone, const std::string& name,
                                 std::int64_t job_id, const std::string& enrol_token) {
  const std::string zp = "zones/" + zone;
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : c.labels) labels[k] = v;
  // Ownership and cost labels come last so extra labels can never hide who pays for a GPU.
  labels["project"] = "kfleet";
  labels["owner"] = c.owner;
  labels["cost-center"] = c.cost_center;
  labels["kfleet-role"] = "agent";
  labels["kfleet-gpu"] = lower(c.gpu_class);
  labels["kfleet-zone"] = zone;
  labels["kfleet-job"] = std::to_string(job_id);
  labels["managed-by"] = "kfleetd";
  nlohmann::json nic = {{"network", c.network}};
  if (!c.subnetwork.empty()) nic["subnetwork"] = c.subnetwork;
  if (c.external_ip) nic["accessConfigs"] = {{{"type", "ONE_TO_ONE_NAT"}, {"name", "External NAT"}}};
  nlohmann::json body = {
      {"name", name},
      {"machineType", zp + "/machineTypes/" + c.machine_type},
      // GPUs cannot live-migrate: the host's maintenance stops the instance instead.
      {"scheduling", {{"onHostMaintenance", "TERMINATE"}, {"automaticRestart", true}, {"provisioningModel", "STANDARD"}}},
      {"disks",
       {{{"boot", true},
         {"autoDelete", true},
         {"initializeParams",
          {{"sourceImage", "projects/" + c.image_project + "/global/images/family/" + c.image_family},
           {"diskSizeGb", std::to_string(c.boot_disk_gb)},
           {"diskType", zp + "/diskTypes/" + c.boot_disk_type},
           {"labels", labels}}}}}},
      {"networkInterfaces", {nic}},
      {"metadata", {{"items", {{{"key", "startup-script"}, {"value", gce_startup_script(c, zone, enrol_token)}}}}}},
      {"labels", labels},
  };
  if (!c.accelerator_type.empty())
    body["guestAccelerators"] = {{{"acceleratorType", zp + "/acceleratorTypes/" + c.accelerator_type},
                                  {"acceleratorCount", c.accelerator_count}}};
  if (!c.service_account_email.empty())
    body["serviceAccounts"] = {{{"email", c.service_account_email},
                                {"scopes", {"https://www.googleapis.com/auth/cloud-platform"}}}};
  return body;
}

}  // namespace kfleet::provision
