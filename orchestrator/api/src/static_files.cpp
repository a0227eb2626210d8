// The dashboards: files under the static dir, confined to it. "/" is index.html.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "http.hpp"

namespace kfleet::api {

namespace {
const char* content_type(const std::string& ext) {
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".json") return "application/json";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  if (ext == ".ico") return "image/x-icon";
  return "application/octet-stream";
}

constexpr const char* kNoDashboards = R"(<!doctype html><meta charset="utf-8"><title>kfleet</title>
<h1>kfleet</h1><p>kfleetd is running, but no dashboards directory was found (kfleetd --dashboards DIR).
The API is at <a href="/api/v1/jobs">/api/v1/jobs</a>; metrics at <a href="/metrics">/metrics</a>.</p>)";
}  // namespace

boost::asio::awaitable<std::optional<Response>> serve_static(Ctx& c, const std::string& dir) {
  namespace fs = std::filesystem;
  std::string rel(c.req.target().substr(0, c.req.target().find('?')));
  if (rel.empty() || rel == "/") rel = "/index.html";
  Response res{http::status::ok, c.req.version()};
  res.keep_alive(c.req.keep_alive());
  if (dir.empty() || !fs::is_directory(dir)) {
    if (rel != "/index.html")
      co_return error_response(c.req, http::status::not_found, "not_found", "no such page");
    res.set(http::field::content_type, "text/html; charset=utf-8");
    res.body() = kNoDashboards;
    res.prepare_payload();
    co_return res;
  }
  std::error_code ec;
  fs::path root = fs::canonical(dir, ec);
  fs::path p = fs::weakly_canonical(root / fs::path(rel).relative_path(), ec);
  auto [a, b] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
  if (ec || a != root.end() || !fs::is_regular_file(p))
    co_return error_response(c.req, http::status::not_found, "not_found", "no such page: " + rel);
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  res.set(http::field::content_type, content_type(p.extension().string()));
  res.set(http::field::cache_control, "no-cache");
  res.body() = ss.str();
  res.prepare_payload();
  co_return res;
}

}  // namespace kfleet::api
