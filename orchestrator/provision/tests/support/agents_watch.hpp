#pragma once
// For kfleetd end-to-end checks: a watcher of GET /api/v1/agents that remembers every region
// block it saw, so a block shorter than the test's other waits can still be shown to have been
// visible to the user.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "kfleet/common/http_client.hpp"

namespace kfleet::provision::testing {

class AgentsWatch {
 public:
  // `token`: a read token; the fleet view, like every route but /health, needs one.
  AgentsWatch(std::string url, std::string token)
      : thread_([this, url = std::move(url), token = std::move(token)] { run(url, token); }) {}
  ~AgentsWatch() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  // Whether a block of this region and kind whose reason holds `words` was ever listed.
  bool saw_block(const std::string& region, const std::string& kind, const std::string& words) const {
    std::lock_guard lock(mutex_);
    for (const auto& b : blocks_) {
      const auto j = nlohmann::json::parse(b);
      if (j["region"] == region && j["kind"] == kind &&
          j["reason"].get<std::string>().find(words) != std::string::npos)
        return true;
    }
    return false;
  }
  // Every block seen, for failure messages.
  std::string seen() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& b : blocks_) out += b + "\n";
    if (!last_error_.empty()) out += "last failed look: " + last_error_ + "\n";
    return out;
  }

 private:
  void run(const std::string& url, const std::string& token) {
    HttpClient client(url, token);
    std::unique_lock lock(mutex_);
    while (!stop_) {
      lock.unlock();
      auto r = client.get("/api/v1/agents?state=all&limit=1000");  // retired ones too
      lock.lock();
      if (r.ok() && r->status == 200) {
        auto j = r->json();
        if (j.ok() && (*j).contains("blocks"))
          for (auto b : (*j)["blocks"]) {
            b.erase("seconds_left");  // changes on every look; the rest names the block
            blocks_.insert(b.dump());
          }
      } else {  // a watch that cannot look must say so, not just see nothing
        last_error_ = r.ok() ? "HTTP " + std::to_string(r->status) + " " + r->body
                             : r.error().message;
      }
      wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; });
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::set<std::string> blocks_;
  std::string last_error_;
  std::thread thread_;  // last: starts once the members it uses exist
};

}  // namespace kfleet::provision::testing
