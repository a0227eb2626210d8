// kfleetd: the orchestrator. One io_context thread runs the API, the control plane and the
// provisioner; the store (SQLite, or PostgreSQL) holds everything that must survive a crash.
// A second thread, with a store connection of its own, serves a user's most read pages (the
// job list, one job, the agent list: Server::serve_reads) so that they do not queue behind the
// agents' calls and the control plane's round trips; it reads the control plane's memory only
// through what it shares under a lock (the live fleet's last-heard times and lease expiries,
// the region blocks, the tokens already checked), and writes nothing (--no-read-thread: none).
// On PostgreSQL a kfleetd that does not lead stands by: the same thread serves the reads from
// a read-only store (standby_responder.hpp) until it takes the leader lock, then leads on the
// socket it already listens on.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <chrono>
#include <functional>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "kfleet/api/server.hpp"
#include "kfleet/cli_support/parse.hpp"
#include "kfleet/common/install_layout.hpp"
#include "kfleet/common/log.hpp"
#include "kfleet/common/pem.hpp"
#include "kfleet/common/secret.hpp"
#include "kfleet/core/control_plane.hpp"
#include "kfleet/core/suite_schedule.hpp"
#include "kfleet/store/db_lock.hpp"
#include "kfleet/store/postgres.hpp"
#include "kfleet/store/store.hpp"
#include "kfleetd_provisioners.hpp"

namespace {

namespace fs = std::filesystem;
using kfleetd::ProvisionerEnv;
using kfleetd::ProvisionerSlot;

kfleet::TimeMs wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the command line says.
struct Options {
  std::string listen = "127.0.0.1:8470", db = "kfleet.db", dashboards, port_file;
  std::string admin_token_file, enrol_token_file, admin_user = "admin";
  std::string tls_cert, tls_key, tls_client_ca, agent_ca_file;
  bool metrics_open = false, allow_plain_http = false;
  int submit_rate = 600, auth_fail_rate = 30;
  std::string agent_binary;
  kfleetd::ProvisionerChoice prov;
  bool durable = false;
  bool no_read_thread = false;
  kfleet::core::Config cfg;
  std::size_t max_body = 8u << 20;
  std::int64_t stockout_base_ms = cfg.block_policy.stockout_base_ms;
  std::int64_t idle_ttl_s = 0;
  std::int64_t retire_lost_s = 24 * 3600;
  std::vector<std::string> suite_files;
  std::string problems_dir;
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("--listen", o.listen, "address:port to serve on (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--db", o.db,
                 "SQLite database file (created if missing), or a PostgreSQL URL "
                 "(postgresql://user@host:5432/kfleet; the database must exist; put a password "
                 "in ~/.pgpass or $PGPASSWORD, not the URL)")
      ->capture_default_str();
  app.add_flag("--no-read-thread", o.no_read_thread,
               "serve every request on the control plane's thread, the user's pages too (by "
               "default those are served on a thread and a store connection of their own)");
  app.add_flag("--durable", o.durable,
               "fsync every commit (survives power loss; default survives process crashes)");
  // Secrets come from files or the environment, never argv (visible to all in `ps`).
  app.add_option("--admin-token-file", o.admin_token_file,
                 "file holding the first admin token (else $KFLEET_ADMIN_TOKEN); stored as its "
                 "SHA-256 on first start; make more with `kfleet token create`");
  app.add_option("--admin-user", o.admin_user, "user name of that first admin token")
      ->capture_default_str();
  app.add_option("--enrol-token-file", o.enrol_token_file,
                 "file holding the token agents enrol with (else $KFLEET_ENROL_TOKEN)");
  app.add_option("--tls-cert", o.tls_cert, "PEM certificate chain: serve HTTPS (TLS 1.2+)");
  app.add_option("--tls-key", o.tls_key, "PEM private key of --tls-cert");
  app.add_option("--tls-client-ca", o.tls_client_ca,
                 "PEM CA: agent calls then need a client certificate it signed (mTLS)");
  app.add_option("--agent-ca-file", o.agent_ca_file,
                 "PEM CA that signed --tls-cert: the agents kfleetd provisions (simulated, "
                 "terraform, gce) get it as a 0600 file and verify kfleetd with it (--ca-file); "
                 "without it they trust the system's CAs");
  app.add_flag("--allow-plain-http", o.allow_plain_http,
               "serve plain HTTP on a non-loopback address (tokens and kernels travel in clear)");
  app.add_flag("--metrics-open", o.metrics_open,
               "serve /metrics without a token (for a Prometheus on a trusted network)");
  app.add_option("--submit-rate-per-min", o.submit_rate,
                 "submissions a minute per token before 429 (0: no limit)")->capture_default_str();
  app.add_option("--auth-fail-rate-per-min", o.auth_fail_rate,
                 "failed authentications a minute per client address before 429 (0: no limit)")
      ->capture_default_str();
  app.add_option("--lease-ttl-ms", o.cfg.lease_ttl_ms, "an agent silent this long loses its job")
      ->capture_default_str()->check(CLI::Range(1000, 600000));
  app.add_option("--heartbeat-ms", o.cfg.heartbeat_ms, "heartbeat period agents are told to use")
      ->capture_default_str()->check(CLI::Range(100, 60000));
  app.add_option("--provisioner", o.prov.kind, "where agents come from")
      ->check(CLI::IsMember({"static", "simulated", "terraform", "gce", "multi"}))->capture_default_str();
  app.add_option("--simulated-cloud", o.prov.sim_cloud_file,
                 "JSON config of the simulated cloud (regions, capacity, scripted stockouts)");
  app.add_option("--terraform-config", o.prov.tf_config, "JSON config of the terraform provisioner");
  app.add_option("--gce-config", o.prov.gce_config,
                 "JSON config of the Compute Engine provisioner (docs/examples/gce.json)");
  app.add_option("--multi-config", o.prov.multi_config,
                 "JSON list of provisioners for --provisioner multi, each serving its own regions or "
                 "zones (docs/examples/multi-cloud.json)");
  app.add_option("--agent-binary", o.agent_binary, "kfleet-agent used by the simulated cloud");
  app.add_option("--stockout-cooldown-ms", o.stockout_base_ms,
                 "first cool-down after a stockout (doubles on repeats)")->capture_default_str();
  app.add_option("--quota-block-ms", o.cfg.block_policy.quota_ms,
                 "how long a quota error (or a stop) blocks its region")->capture_default_str();
  app.add_option("--unsupported-block-ms", o.cfg.block_policy.unsupported_ms,
                 "how long a zone that does not offer the machine type is blocked")->capture_default_str();
  app.add_option("--idle-agent-ttl-s", o.idle_ttl_s,
                 "release provisioned agents idle this long (0: never)")->capture_default_str();
  app.add_option("--retire-lost-agents-after-s", o.retire_lost_s,
                 "retire agents lost (silent) this long; their rows stay for history, their "
                 "tokens stop working and they must enrol again (0: never)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--max-in-flight-per-token", o.cfg.max_in_flight_per_token,
                 "jobs one API token may have queued or running at once; a submission past it "
                 "is refused with 429 in_flight_limit (0: no limit)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--dashboards", o.dashboards,
                 "the built dashboards (a folder with index.html, or one whose dist/ holds it); "
                 "default: the installed ones, share/kfleet/dashboards of this kfleetd's prefix (a "
                 "build tree's link to the pages its build made)");
  app.add_option("--max-body-bytes", o.max_body, "largest request body accepted")->capture_default_str();
  app.add_option("--port-file", o.port_file, "write the bound port here once listening");
  app.add_option("--problems-dir", o.problems_dir,
                 "the problem library jobs may name (kernel.problem: NAME@VERSION; "
                 "docs/problems.md); a job naming a problem or version not in it is refused at "
                 "submit. Default: $KFLEET_PROBLEMS_DIR, else the installed library, "
                 "share/kfleet/kernels/problems of this kfleetd's prefix");
  app.add_option("--suite", o.suite_files,
                 "a suite YAML with schedule: (cron, UTC) to run as a regression run; repeatable");
}

// The tokens (from files or the environment) and the dashboards folder, checked and put where
// the control plane and the server read them. Prints why and returns false on a bad value.
bool finish_options(Options& o) {
  auto admin_token = kfleet::secret_from_file_or_env(o.admin_token_file, "KFLEET_ADMIN_TOKEN",
                                                     "admin token");
  if (!admin_token) {
    std::cerr << "kfleetd: " << admin_token.error().message << "\n";
    return false;
  }
  auto enrol_token = kfleet::secret_from_file_or_env(o.enrol_token_file, "KFLEET_ENROL_TOKEN",
                                                     "enrolment token");
  if (!enrol_token) {
    std::cerr << "kfleetd: " << enrol_token.error().message << "\n";
    return false;
  }
  if (!admin_token->empty() && admin_token->size() < 16) {
    std::cerr << "kfleetd: the admin token is too short (" << admin_token->size()
              << " characters); use 16 or more random characters, e.g. `openssl rand -hex 32`\n";
    return false;
  }
  if (enrol_token->empty())
    kfleet::log::warn("kfleetd", "no enrolment token (--enrol-token-file or KFLEET_ENROL_TOKEN): "
                                 "no agent can enrol");
  o.cfg.admin_token = *admin_token;
  o.cfg.admin_user = o.admin_user;
  o.cfg.enrol_token = *enrol_token;
  o.cfg.block_policy.stockout_base_ms = o.stockout_base_ms;
  o.cfg.idle_agent_ttl_ms = o.idle_ttl_s * 1000;
  o.cfg.lost_agent_retire_ms = o.retire_lost_s * 1000;
  {
    const std::string dir = o.problems_dir.empty()
                                ? kfleet::problem_library_dir(std::getenv("KFLEET_PROBLEMS_DIR"),
                                                              kfleet::installed_data("kernels/problems").string())
                                : o.problems_dir;
    auto lib = std::make_shared<kfleet::ProblemLibrary>(kfleet::load_problem_library(dir));
    if (!o.problems_dir.empty() && lib->problems.empty()) {
      // Asked for by name: a library that is not there is a mistake, not a choice.
      std::cerr << "kfleetd: --problems-dir " << dir << ": no problem library there"
                << (lib->issues.empty() ? "" : " (" + lib->issues.front().to_string() + ")") << "\n";
      return false;
    }
    for (const auto& i : lib->issues)
      kfleet::log::warn("kfleetd", "problem library: ", i.to_string());
    if (lib->problems.empty()) {
      kfleet::log::warn("kfleetd", "no problem library at ", dir,
                        " (--problems-dir): jobs naming a problem are refused");
    } else {
      kfleet::log::info("kfleetd", "problem library ", dir, ": ", lib->problems.size(), " problems");
      o.cfg.problems = std::move(lib);
    }
  }
  if (o.dashboards.empty()) {
    // The installed pages (a build tree's share/kfleet/dashboards links to what it built).
    if (auto d = kfleet::installed_data("dashboards/index.html"); !d.empty())
      o.dashboards = d.parent_path().string();
  } else if (!fs::exists(fs::path(o.dashboards) / "index.html")) {
    // The source folder (dashboards/) holds the built pages in dist/: take either.
    if (fs::exists(fs::path(o.dashboards) / "dist" / "index.html")) {
      o.dashboards = (fs::path(o.dashboards) / "dist").string();
    } else {
      std::cerr << "kfleetd: --dashboards " << o.dashboards
                << " has no index.html (nor dist/index.html): build the dashboards with "
                   "`cmake --build build --target dashboards` (they go to build/dashboards/dist)\n";
      return false;
    }
  }
  return true;
}

// The server's options from the command line. Prints why and returns nothing on a bad value.
std::optional<kfleet::api::ServerOptions> server_options(const Options& o) {
  auto colon = o.listen.rfind(':');
  if (colon == std::string::npos) {
    std::cerr << "kfleetd: --listen wants address:port, got '" << o.listen << "'\n";
    return std::nullopt;
  }
  kfleet::api::ServerOptions so;
  so.address = o.listen.substr(0, colon);
  so.port = static_cast<std::uint16_t>(std::stoi(o.listen.substr(colon + 1)));
  so.max_body_bytes = o.max_body;
  so.static_dir = o.dashboards;
  so.metrics_open = o.metrics_open;
  so.tls_cert_file = o.tls_cert;
  so.tls_key_file = o.tls_key;
  so.tls_client_ca_file = o.tls_client_ca;
  so.submit_per_minute = o.submit_rate;
  so.auth_failures_per_minute = o.auth_fail_rate;
  return so;
}

// Refuses plain HTTP off loopback unless asked (--allow-plain-http), and says which it serves.
bool plain_http_checked(const Options& o, const kfleet::api::ServerOptions& so) {
  const bool tls = !o.tls_cert.empty();
  boost::system::error_code aec;
  auto addr = boost::asio::ip::make_address(so.address, aec);
  const bool loopback = !aec && addr.is_loopback();
  if (!tls && !loopback && !o.allow_plain_http) {
    std::cerr << "kfleetd: refusing to serve plain HTTP on " << so.address
              << ": tokens, kernels and results would travel in clear. Pass --tls-cert and "
                 "--tls-key, listen on 127.0.0.1, or (on a trusted network only) "
                 "--allow-plain-http\n";
    return false;
  }
  if (!tls && !loopback)
    kfleet::log::warn("kfleetd", "PLAIN HTTP on ", so.address,
                      " (--allow-plain-http): tokens and kernels travel in clear");
  else if (!tls)
    kfleet::log::info("kfleetd", "plain HTTP on loopback only (local use and the demo); "
                                 "use --tls-cert/--tls-key for anything else");
  return true;
}

// The PEM CA given to provisioned agents (--agent-ca-file), or "" without one. Prints why and
// returns nothing when the file is unreadable or not a PEM certificate.
std::optional<std::string> read_agent_ca(const Options& o) {
  const bool tls = !o.tls_cert.empty();
  std::string pem;
  if (!o.agent_ca_file.empty()) {
    std::ifstream in(o.agent_ca_file, std::ios::binary);
    if (!in) {
      std::cerr << "kfleetd: cannot read --agent-ca-file " << o.agent_ca_file << "\n";
      return std::nullopt;
    }
    pem.assign(std::istreambuf_iterator<char>(in), {});
    if (auto why = kfleet::pem_certificates_problem(pem); !why.empty()) {
      std::cerr << "kfleetd: --agent-ca-file " << o.agent_ca_file
                << " must hold the PEM CA certificate that signed --tls-cert: " << why << "\n";
      return std::nullopt;
    }
    if (!tls)
      kfleet::log::warn("kfleetd", "--agent-ca-file without --tls-cert: agents reach this kfleetd "
                                   "over plain HTTP and have no certificate to verify");
  } else if (tls && o.prov.kind != "static") {
    kfleet::log::info("kfleetd", "no --agent-ca-file: the agents kfleetd provisions verify its "
                                 "certificate against their system's CAs");
  }
  return pem;
}

// A standby's read-only store, provisioner slot and control plane; they stay alive to the end
// (streams opened while standing by read through them after the takeover).
struct Standby {
  kfleet::store::StorePtr store;
  ProvisionerSlot slot;
  std::unique_ptr<kfleet::core::ControlPlane> cp;
};

// Stands by on PostgreSQL while another kfleetd leads: serves reads from a read-only store on
// `server` (created here, on the socket the leader will keep) and tries for the leader lock
// every 250 ms. Returns nothing once this kfleetd holds the lock, else the exit code it should
// stop with (0 on a signal, 1 on an error).
std::optional<int> stand_by(boost::asio::io_context& io, kfleet::store::PostgresLeader& leader,
             const std::string& db, const std::string& db_name,
             std::shared_ptr<kfleet::SystemClock> clock, const kfleet::core::Config& cfg,
             kfleet::api::ServerOptions& so, const std::function<void(std::uint16_t)>& write_port_file,
             Standby& sb, std::unique_ptr<kfleet::api::Server>& server) {
  const bool tls = !so.tls_cert_file.empty();
  kfleet::store::PostgresOptions ro{db};
  ro.read_only = true;
  auto rs = kfleet::store::open_postgres_store(ro);
  if (!rs) {
    std::cerr << "kfleetd: cannot open the store " << db_name << " (read-only, standing by): "
              << rs.error().message << "\n";
    return 1;
  }
  sb.store = std::move(*rs);
  sb.slot.set_label("none (standby; the leader provisions)");
  kfleet::core::Config scfg = cfg;
  scfg.read_only = true;
  sb.cp = std::make_unique<kfleet::core::ControlPlane>(io.get_executor(), *sb.store, clock,
                                                        sb.slot, scfg);
  so.role = "standby";
  server = std::make_unique<kfleet::api::Server>(io, *sb.cp, so);
  auto p = server->listen();
  if (!p) {
    std::cerr << "kfleetd: " << p.error().message << "\n";
    return 1;
  }
  so.port = *p;
  write_port_file(so.port);
  auto cur = leader.current();
  if (cur) server->set_leader(cur->url, cur->epoch);
  kfleet::log::info("kfleetd", "standby on ", tls ? "https://" : "http://", so.address, ":",
                    so.port, ": serving reads from ", db_name, " (read-only); ",
                    cur ? "the leader is " + (cur->url.empty() ? "starting" : cur->url) +
                              " (epoch " + std::to_string(cur->epoch) + ")"
                        : cur.error().message,
                    "; taking over when it stops");
  // Stands by on this thread, serving, and tries for the lock every 250 ms.
  bool stop = false, acquired = false;
  boost::asio::signal_set standby_signals(io, SIGINT, SIGTERM);
  standby_signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) stop = true;
  });
  boost::asio::steady_timer poll(io);
  std::function<void()> try_lead = [&] {
    if (auto c = leader.current(); c) server->set_leader(c->url, c->epoch);
    auto g = leader.try_acquire(wall_ms());
    if (!g) kfleet::log::warn("kfleetd", "standby: ", g.error().message);
    if (g && *g) {
      acquired = true;
      return;
    }
    poll.expires_after(std::chrono::milliseconds(250));
    poll.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) try_lead();
    });
  };
  try_lead();
  while (!stop && !acquired) io.run_one();
  if (stop) {
    kfleet::log::info("kfleetd", "signal: the standby stops");
    server->stop();
    return 0;
  }
  standby_signals.cancel();
  poll.cancel();
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kfleetd: the kfleet orchestrator (queue, scheduler, leases, API, dashboards)"};
  Options o;
  add_options(app, o);
  // An unknown option is answered with the nearest ones ("did you mean ...?"); exit 2.
  if (auto code = kfleet::cli_support::parse_or_explain(app, argc, argv, std::cout, std::cerr, 2))
    return *code;
  if (!finish_options(o)) return 2;
  auto server_opts = server_options(o);
  if (!server_opts) return 2;
  kfleet::api::ServerOptions so = *server_opts;
  const bool tls = !o.tls_cert.empty();
  auto agent_ca_pem = read_agent_ca(o);
  if (!agent_ca_pem || !plain_http_checked(o, so)) return 2;
  const std::string& db = o.db;
  const bool durable = o.durable;
  const kfleet::core::Config& cfg = o.cfg;

  const bool postgres = kfleet::store::is_postgres_url(db);
  const std::string db_name = postgres ? kfleet::store::redact_postgres_url(db) : db;
  boost::asio::io_context io;
  auto clock = std::make_shared<kfleet::SystemClock>();
  so.clock = clock;  // the control plane's time for the API's rate limits too
  std::function<void(std::uint16_t)> write_port_file = [&](std::uint16_t p) {
    if (o.port_file.empty()) return;
    std::ofstream(o.port_file + ".tmp") << p << "\n";
    fs::rename(o.port_file + ".tmp", o.port_file);
  };
  // One kfleetd per SQLite file; the lock lives as long as this process (kill -9 included).
  // PostgreSQL needs no file lock: the store serialises its writers on the server.
  std::optional<kfleet::store::DbLock> db_lock;
  std::unique_ptr<kfleet::store::PostgresLeader> leader;
  Standby standby;
  std::unique_ptr<kfleet::api::Server> server;
  kfleet::Result<kfleet::store::StorePtr> st =
      kfleet::make_error(kfleet::Errc::internal, "no store opened");
  if (postgres) {
    if (kfleet::store::postgres_url_has_password(db))
      kfleet::log::warn("kfleetd", "the --db URL holds a password, visible to every user in "
                                   "`ps`: put it in ~/.pgpass or $PGPASSWORD instead");
    if (durable)
      kfleet::log::info("kfleetd", "--durable is a SQLite setting; on PostgreSQL every commit "
                                   "is as durable as the server's synchronous_commit");
    // Several kfleetd may share one database: one leads (schedules, leases, provisions), the
    // others stand by: they serve reads from a read-only connection, answer writes 503 with
    // the leader's URL, and take over when the leader's lock connection dies (kill -9
    // included), on the port they already listen on.
    auto l = kfleet::store::PostgresLeader::connect(db);
    if (!l) {
      std::cerr << "kfleetd: cannot open the store " << db_name << ": " << l.error().message
                << "\n";
      return 1;
    }
    leader = std::move(*l);
    auto got = leader->try_acquire(wall_ms());
    if (!got) {
      std::cerr << "kfleetd: " << got.error().message << "\n";
      return 1;
    }
    so.role = "leader";
    if (!*got) {
      if (auto rc = stand_by(io, *leader, db, db_name, clock, cfg, so, write_port_file, standby,
                             server))
        return *rc;
    }
    kfleet::log::info("kfleetd", "leading ", db_name, " (epoch ", leader->epoch(), ")");
    st = kfleet::store::open_postgres_store({db, leader->epoch()});
  } else {
    auto lock = kfleet::store::DbLock::acquire(db);
    if (!lock) {
      std::cerr << "kfleetd: " << lock.error().message << "\n";
      return 1;
    }
    db_lock.emplace(std::move(*lock));
    st = kfleet::store::open_sqlite_store({db, durable});
  }
  if (!st) {
    std::cerr << "kfleetd: cannot open the store " << db_name << ": " << st.error().message
              << "\n";
    return 1;
  }
  ProvisionerSlot slot;
  kfleet::core::ControlPlane cp(io.get_executor(), **st, clock, slot, cfg);
  kfleet::Result<std::uint16_t> port = so.port;
  if (server) {
    // The standby's socket stays open: connections that arrived meanwhile wait in its backlog.
    server->promote(cp);
  } else {
    server = std::make_unique<kfleet::api::Server>(io, cp, so);
    port = server->listen();
    if (!port) {
      std::cerr << "kfleetd: " << port.error().message << "\n";
      return 1;
    }
  }
  const std::string url =
      std::string(tls ? "https://" : "http://") + so.address + ":" + std::to_string(*port);
  if (db_lock) db_lock->set_serving(url);
  // The leader says where it serves, and steps down (exits; a supervisor restarts it as a
  // standby) as soon as its lock connection is gone or another kfleetd has taken over: its
  // store writes are fenced by the epoch anyway.
  boost::asio::steady_timer leader_check(io);
  std::function<void()> check_leader;
  if (leader) {
    if (auto r = leader->set_url(url); !r) {
      std::cerr << "kfleetd: " << r.error().message << "\n";
      return 1;
    }
    check_leader = [&] {
      leader_check.expires_after(std::chrono::seconds(1));
      leader_check.async_wait([&](const boost::system::error_code& ec) {
        if (ec) return;
        if (!leader->still_leader()) {
          kfleet::log::error("kfleetd", "lost the leadership of ", db_name,
                             " (its lock connection closed or another kfleetd took over); "
                             "exiting so that this one restarts as a standby");
          std::fflush(nullptr);
          std::_Exit(3);
        }
        check_leader();
      });
    };
    check_leader();
  }

  ProvisionerEnv env{io,       url,       o.cfg.enrol_token, *agent_ca_pem, o.agent_binary,
                     argv[0], db,        postgres,          tls, {}};
  // An instance must enrol within the enrolment deadline of its request; its token outlives
  // that by the time an instance takes to be created and boot.
  env.mint_enrol_token = [&cp](const std::string& name, int uses,
                               const std::string& instance_id) -> kfleet::Result<std::string> {
    kfleet::core::EnrolTokenRequest r;
    r.name = name;
    r.uses = uses;
    r.instance_id = instance_id;
    r.expires_in_ms = cp.config().enrol_deadline_ms + 15 * 60'000;
    auto t = cp.mint_enrol_token(r, "kfleetd");
    if (!t) return t.error();
    return t->secret;
  };
  if (!kfleetd::configure_provisioner(o.prov, env, slot)) return 2;

  cp.start();
  // The users' pages on a thread of their own, reading a second connection: on PostgreSQL a
  // read-only one (it can write nothing), on SQLite another connection to the file (WAL: it
  // reads beside the writer). Without it, they are served on this thread as everything else.
  if (!o.no_read_thread) {
    kfleet::Result<kfleet::store::StorePtr> reads =
        kfleet::make_error(kfleet::Errc::internal, "not opened");
    if (postgres) {
      kfleet::store::PostgresOptions ro{db};
      ro.read_only = true;
      ro.application_name = "kfleetd-reads";
      reads = kfleet::store::open_postgres_store(ro);
    } else {
      reads = kfleet::store::open_sqlite_store({db, durable});
    }
    if (reads)
      server->serve_reads(std::move(*reads));
    else
      kfleet::log::warn("kfleetd", "the users' pages are served on the control plane's thread: ",
                        "cannot open a second connection to ", db_name, ": ",
                        reads.error().message);
  }
  kfleet::core::SuiteSchedule suites(io.get_executor(), cp);
  for (const auto& f : o.suite_files) {
    if (auto r = suites.add(f); !r) {
      std::cerr << "kfleetd: --suite " << f << ": " << r.error().message << "\n";
      return 2;
    }
  }
  suites.start();
  write_port_file(*port);
  kfleet::log::info("kfleetd", "serving ", url, " (store ", db_name,
                    !postgres && durable ? ", durable" : "",
                    "; provisioner ", slot.name(), "; dashboards ",
                    o.dashboards.empty() ? "(built-in page)" : o.dashboards, ")");
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](auto, int sig) {
    kfleet::log::info("kfleetd", "signal ", sig, ": shutting down");
    server->stop();
    suites.stop();
    cp.stop();
    slot.shutdown();
    io.stop();
  });
  io.run();
  server->stop();  // the read thread ends before the control plane it reads goes
  return 0;
}
