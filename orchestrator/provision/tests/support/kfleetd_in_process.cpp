#include "kfleetd_in_process.hpp"

#include <boost/asio/post.hpp>

#include "kfleet/common/bundle.hpp"
#include "kfleet/common/http_client.hpp"

namespace kfleet::provision::testing {

using nlohmann::json;

void KfleetdInProcess::serve(Provisioner& prov, ClockPtr clock, core::Config cfg, const std::string& store_path) {
  ASSERT_FALSE(cfg.user_tokens.empty()) << "the tests read as cfg.user_tokens[0]";
  user_token_ = cfg.user_tokens[0];
  enrol_token_ = cfg.enrol_token;
  auto st = store::open_sqlite_store({store_path, false});
  ASSERT_TRUE(st.ok()) << st.error().message;
  store_ = std::move(*st);
  cp_ = std::make_unique<core::ControlPlane>(io_.get_executor(), *store_, std::move(clock), prov, std::move(cfg));
  server_ = std::make_unique<api::Server>(io_, *cp_, api::ServerOptions{});
  auto port = server_->listen();
  ASSERT_TRUE(port.ok()) << port.error().message;
  url_ = "http://127.0.0.1:" + std::to_string(*port);
  cp_->start();
  thread_ = std::thread([this] { io_.run(); });
}

void KfleetdInProcess::stop_serving() {
  if (thread_.joinable()) {
    boost::asio::post(io_, [this] {
      server_->stop();
      cp_->stop();
    });
    io_.stop();
    thread_.join();
  }
  server_.reset();
  cp_.reset();
}

std::int64_t KfleetdInProcess::submit(const std::string& name, const std::vector<std::string>& regions) {
  std::string list;
  for (const auto& r : regions) list += (list.empty() ? "" : ", ") + r;
  const std::string yaml = "name: " + name + "\ntarget: {gpu: L4, regions: [" + list +
                           "]}\nkernel:\n  family: attention\n  language: cuda\n  sources: [k.cu]\n"
                           "simulate: {time_us: 50, stage_ms: 1}\n";
  Bundle b;
  b.files.push_back({"k.cu", "__global__ void k() {}\n"});
  HttpClient user(url_, user_token_);
  auto r = user.post_json("/api/v1/jobs", {{"spec_yaml", yaml}, {"source_name", name + ".yaml"},
                                           {"bundle", bundle_to_json(b)},
                                           {"force", true}});  // the same kernel again is a new job
  EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.error().message);
  return r.ok() && r->status == 201 ? (*r->json())["job"]["id"].get<std::int64_t>() : 0;
}

json KfleetdInProcess::get(const std::string& path) {
  HttpClient c(url_, user_token_);
  auto r = c.get(path);
  EXPECT_TRUE(r.ok() && r->status == 200) << path << ": " << (r.ok() ? r->body : r.error().message);
  return r.ok() && r->status == 200 ? *r->json() : json::object();
}

json KfleetdInProcess::job(std::int64_t id) { return get("/api/v1/jobs/" + std::to_string(id))["job"]; }

std::vector<json> KfleetdInProcess::events(std::int64_t id, const std::string& type) {
  std::vector<json> out;
  const json page = get("/api/v1/jobs/" + std::to_string(id) + "/events");  // outlives the loop
  for (const auto& e : page["events"])
    if (e["type"] == type) out.push_back(e);
  return out;
}

json KfleetdInProcess::wait_for_capacity(std::int64_t id, const std::string& outcome,
                                         std::chrono::steady_clock::duration deadline) {
  json found;
  bool stopped = false;  // a stop ends the wait early: no later answer can come
  wait_until(deadline, [&] {
    for (const auto& e : events(id, "capacity")) {
      if (e["data"]["outcome"] == outcome) return found = e, true;
      if (e["data"]["outcome"] == "fatal") return stopped = true;
    }
    return false;
  });
  EXPECT_FALSE(found.is_null()) << "job " << id << " got no '" << outcome << "' capacity answer"
                                << (stopped ? " (provisioning stopped)" : "") << "; job now " << job(id).dump()
                                << "\nits events: " << get("/api/v1/jobs/" + std::to_string(id) + "/events").dump();
  return found;
}

json KfleetdInProcess::block_for(const std::string& region) {
  const json fleet = get("/api/v1/agents?state=all&limit=1000");  // outlives the loop; retired too
  for (const auto& b : fleet["blocks"])
    if (b["region"] == region) return b;
  return nullptr;
}

std::int64_t KfleetdInProcess::run_on_new_agent(std::int64_t job_id, const std::string& region,
                                                const std::string& instance, const std::string& provider,
                                                const std::string& name) {
  HttpClient enrol(url_, enrol_token_);
  auto e = enrol.post_json("/api/v1/agents/enrol",
                           {{"name", name}, {"region", region}, {"backend", "simulated"}, {"provider", provider},
                            {"instance_id", instance}, {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}}}}});
  EXPECT_TRUE(e.ok() && e->status == 201) << (e.ok() ? e->body : e.error().message);
  if (!e.ok() || e->status != 201) return 0;
  const auto agent_id = (*e->json())["agent_id"].get<std::int64_t>();
  HttpClient agent(url_, (*e->json())["token"].get<std::string>());
  auto l = agent.post_json("/api/v1/agents/" + std::to_string(agent_id) + "/lease?wait_ms=20000", json::object());
  EXPECT_TRUE(l.ok() && l->status == 200) << (l.ok() ? l->body : l.error().message);
  if (!l.ok() || l->status != 200) return agent_id;
  const json lease = (*l->json())["lease"];
  EXPECT_EQ(lease["job_id"].get<std::int64_t>(), job_id) << "the agent in " << region << " got another job";
  auto f = agent.post_json("/api/v1/runs/" + std::to_string(lease["run_id"].get<std::int64_t>()) + "/finish",
                           {{"fencing_token", lease["fencing_token"]},
                            {"verdict", {{"outcome", "passed"}, {"median_us", 50.0}, {"simulated", true}}}});
  EXPECT_TRUE(f.ok() && f->status == 200) << (f.ok() ? f->body : f.error().message);
  return agent_id;
}

}  // namespace kfleet::provision::testing
