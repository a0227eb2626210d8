// The JSON-RPC side of `kfleet mcp`: framing, the lifecycle, tools/list and tools/call.
#include "server.hpp"

#include <chrono>
#include <istream>
#include <ostream>
#include <thread>

namespace kfleet::cli::mcp {

const std::vector<std::string> kProtocolVersions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                    "2024-11-05"};

namespace {

// JSON-RPC 2.0 error codes.
constexpr int kParseError = -32700, kInvalidRequest = -32600, kMethodNotFound = -32601,
              kInvalidParams = -32602, kInternalError = -32603;

}  // namespace

class Server::RunningCall final : public Call {
 public:
  RunningCall(Server& s, nlohmann::json id, nlohmann::json token)
      : s_(s), id_(std::move(id)), token_(std::move(token)) {}

  void progress(double progress, std::optional<double> total, const std::string& message) override {
    if (token_.is_null()) return;
    nlohmann::json p = {{"progressToken", token_}, {"progress", progress}};
    if (total) p["total"] = *total;
    if (!message.empty()) p["message"] = message;
    s_.send({{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", p}});
  }

  bool cancelled() const { return cancelled_; }

  bool wait(int ms) override {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
      std::optional<nlohmann::json> msg;
      {
        std::unique_lock lock(s_.mu_);
        s_.cv_.wait_until(lock, until, [&] { return !s_.inbox_.empty() || s_.eof_; });
        if (s_.inbox_.empty()) return !s_.eof_;  // the deadline passed, or stdin closed
        auto line = std::move(s_.inbox_.front());
        s_.inbox_.pop_front();
        msg = nlohmann::json::parse(line, nullptr, false);
      }
      // While a tool runs, only what concerns it is handled now: its cancellation and pings.
      // Other requests wait their turn (the client sees them answered after this one).
      if (msg->is_discarded()) {
        s_.reply_error(nullptr, kParseError, "not JSON");
        continue;
      }
      const std::string method = msg->is_object() ? msg->value("method", std::string()) : "";
      if (method == "notifications/cancelled") {
        const auto& p = msg->value("params", nlohmann::json::object());
        if (p.contains("requestId") && p["requestId"] == id_) {
          cancelled_ = true;
          return false;
        }
        continue;
      }
      if (method == "ping" && msg->contains("id")) {
        s_.reply((*msg)["id"], nlohmann::json::object());
        continue;
      }
      s_.deferred_.push_back(std::move(*msg));
    }
  }

 private:
  Server& s_;
  nlohmann::json id_, token_;
  bool cancelled_ = false;
};

Server::Server(std::istream& in, std::ostream& out, std::vector<Tool> tools, std::string version,
               std::string instructions)
    : in_(in), out_(out), tools_(std::move(tools)), version_(std::move(version)),
      instructions_(std::move(instructions)) {}

void Server::reader() {
  std::string line;
  while (std::getline(in_, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::lock_guard lock(mu_);
    inbox_.push_back(std::move(line));
    cv_.notify_all();
  }
  std::lock_guard lock(mu_);
  eof_ = true;
  cv_.notify_all();
}

std::optional<nlohmann::json> Server::next_message() {
  if (!deferred_.empty()) {
    auto m = std::move(deferred_.front());
    deferred_.pop_front();
    return m;
  }
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !inbox_.empty() || eof_; });
  if (inbox_.empty()) return std::nullopt;
  auto line = std::move(inbox_.front());
  inbox_.pop_front();
  return nlohmann::json::parse(line, nullptr, false);
}

int Server::serve() {
  std::thread t([this] { reader(); });
  // stdin closing ends the session (the client went away); the reader ends with it.
  while (auto msg = next_message()) handle(*msg);
  t.join();
  return 0;
}

void Server::send(const nlohmann::json& msg) {
  // One message per line: dump() escapes any newline inside strings.
  out_ << msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  out_.flush();
}

void Server::reply(const nlohmann::json& id, const nlohmann::json& result) {
  send({{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
}

void Server::reply_error(const nlohmann::json& id, int code, const std::string& message) {
  send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

void Server::handle(const nlohmann::json& msg) {
  if (msg.is_discarded()) return reply_error(nullptr, kParseError, "not JSON");
  if (!msg.is_object() || msg.value("jsonrpc", std::string()) != "2.0")
    return reply_error(nullptr, kInvalidRequest,
                       "expected one JSON-RPC 2.0 message object per line (batches are not "
                       "part of MCP since 2025-06-18)");
  if (!msg.contains("method")) return;  // a response to us: we send no requests
  if (!msg["method"].is_string())
    return reply_error(msg.value("id", nlohmann::json()), kInvalidRequest, "method must be a string");
  const std::string method = msg["method"];
  if (!msg.contains("id")) return;  // notifications: initialized, cancelled (nothing running)
  const auto& id = msg["id"];
  if (!id.is_string() && !id.is_number_integer())
    return reply_error(nullptr, kInvalidRequest, "a request id must be a string or an integer");
  const auto params = msg.value("params", nlohmann::json::object());

  if (method == "initialize") {
    const std::string asked = params.value("protocolVersion", std::string());
    std::string version = kProtocolVersions.front();
    for (const auto& v : kProtocolVersions)
      if (v == asked) version = v;
    return reply(id, {{"protocolVersion", version},
                      {"capabilities", {{"tools", {{"listChanged", false}}}}},
                      {"serverInfo", {{"name", "kfleet"}, {"title", "kfleet"}, {"version", version_}}},
                      {"instructions", instructions_}});
  }
  if (method == "ping") return reply(id, nlohmann::json::object());
  if (method == "tools/list") {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& t : tools_) {
      nlohmann::json d = {{"name", t.name},
                          {"title", t.title},
                          {"description", t.description},
                          {"inputSchema", t.input_schema},
                          {"outputSchema", t.output_schema}};
      if (!t.annotations.empty()) d["annotations"] = t.annotations;
      list.push_back(d);
    }
    return reply(id, {{"tools", list}});
  }
  if (method == "tools/call") {
    auto result = call_tool(id, params);
    if (!result.is_null()) reply(id, result);
    return;
  }
  reply_error(id, kMethodNotFound,
              "kfleet mcp has no method '" + method + "': it offers tools only (tools/list, "
              "tools/call)");
}

nlohmann::json Server::call_tool(const nlohmann::json& id, const nlohmann::json& params) {
  const std::string name = params.value("name", std::string());
  const Tool* tool = nullptr;
  for (const auto& t : tools_)
    if (t.name == name) tool = &t;
  if (!tool) {
    std::string names;
    for (const auto& t : tools_) names += (names.empty() ? "" : ", ") + t.name;
    reply_error(id, kInvalidParams, "Unknown tool: '" + name + "' (the tools are " + names + ")");
    return nullptr;
  }
  nlohmann::json args = params.value("arguments", nlohmann::json::object());
  if (!args.is_object()) {
    reply_error(id, kInvalidParams, "arguments must be an object");
    return nullptr;
  }
  nlohmann::json token;
  if (params.contains("_meta") && params["_meta"].is_object())
    token = params["_meta"].value("progressToken", nlohmann::json());
  RunningCall call(*this, id, token);
  ToolResult r;
  try {
    r = tool->run(args, call);
  } catch (const std::exception& e) {
    reply_error(id, kInternalError, std::string("kfleet mcp failed in ") + name + ": " + e.what());
    return nullptr;
  }
  // A cancelled request gets no answer (the client has stopped waiting for it).
  if (call.cancelled()) return nullptr;
  if (!r.error.empty())
    return {{"content", {{{"type", "text"}, {"text", r.error}}}}, {"isError", true}};
  return {{"content", {{{"type", "text"}, {"text", r.structured.dump(2)}}}},
          {"structuredContent", r.structured},
          {"isError", false}};
}

}  // namespace kfleet::cli::mcp
