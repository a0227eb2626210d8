#pragma once
// A Model Context Protocol server over stdio: newline-delimited JSON-RPC 2.0 messages on
// stdin/stdout (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports).
// Tools only; each declares JSON schemas for its input and its output, and answers with
// structuredContent plus the same JSON as text. Knows nothing of kfleet: tools.cpp does.
#include <condition_variable>
#include <deque>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kfleet::cli::mcp {

// The revisions this server speaks, newest first; the newest is answered to any other.
extern const std::vector<std::string> kProtocolVersions;

struct ToolResult {
  nlohmann::json structured;  // matches the tool's outputSchema (absent when is_error)
  std::string error;          // set: a tool execution error the model can act on (isError)
};
inline ToolResult tool_error(std::string message) { return {nullptr, std::move(message)}; }

// What a running tool can do besides computing: report progress (sent only when the request
// carried a progressToken) and wait while noticing cancellation.
class Call {
 public:
  virtual ~Call() = default;
  virtual void progress(double progress, std::optional<double> total, const std::string& message) = 0;
  // Waits up to ms (less if a message arrives); false once the client cancelled this request
  // or closed stdin, so the tool stops.
  virtual bool wait(int ms) = 0;
};

struct Tool {
  std::string name, title, description;
  nlohmann::json input_schema, output_schema;
  nlohmann::json annotations = nlohmann::json::object();
  std::function<ToolResult(const nlohmann::json& arguments, Call& call)> run;
};

class Server {
 public:
  Server(std::istream& in, std::ostream& out, std::vector<Tool> tools, std::string version,
         std::string instructions);
  // Serves until stdin closes; returns the process exit status.
  int serve();

 private:
  class RunningCall;
  friend class RunningCall;

  void reader();
  std::optional<nlohmann::json> next_message();
  void handle(const nlohmann::json& msg);
  nlohmann::json call_tool(const nlohmann::json& id, const nlohmann::json& params);
  void send(const nlohmann::json& msg);
  void reply(const nlohmann::json& id, const nlohmann::json& result);
  void reply_error(const nlohmann::json& id, int code, const std::string& message);

  std::istream& in_;
  std::ostream& out_;
  std::vector<Tool> tools_;
  std::string version_, instructions_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> inbox_;   // lines read, not yet handled
  bool eof_ = false;
  std::deque<nlohmann::json> deferred_;  // requests that arrived while a tool ran
};

}  // namespace kfleet::cli::mcp
