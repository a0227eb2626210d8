#include "kfleet/agent/spool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace kfleet::agent {

namespace fs = std::filesystem;

namespace {

Error io_error(const std::string& what, const std::string& path) {
  return make_error(Errc::unavailable,
                    what + " " + path + ": " + std::strerror(errno) +
                        " (is the --work-dir writable and the disk not full?)");
}

}  // namespace

std::string spool_path(const std::string& dir, std::int64_t run_id) {
  return (fs::path(dir) / ("run-" + std::to_string(run_id) + ".jsonl")).string();
}

Result<RunSpool> RunSpool::create(const std::string& dir, std::int64_t run_id,
                                  std::int64_t job_id, std::int64_t fencing_token) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(Errc::unavailable, "cannot create spool dir " + dir + ": " + ec.message());
  RunSpool s;
  s.path_ = spool_path(dir, run_id);
  s.fd_ = ::open(s.path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (s.fd_ < 0) return io_error("cannot create spool", s.path_);
  s.run_id_ = run_id;
  s.job_id_ = job_id;
  s.token_ = fencing_token;
  nlohmann::json header{{"run_id", run_id}, {"job_id", job_id}, {"fencing_token", fencing_token}};
  if (auto r = s.write_lines(header.dump() + "\n"); !r) return r.error();
  return s;
}

Result<RunSpool> RunSpool::open(const std::string& path) {
  std::ifstream in(path);
  if (!in) return io_error("cannot read spool", path);
  RunSpool s;
  s.path_ = path;
  std::string line;
  if (!std::getline(in, line)) return make_error(Errc::invalid_argument, "empty spool " + path);
  auto h = nlohmann::json::parse(line, nullptr, false);
  if (h.is_discarded() || !h.is_object() || !h.contains("run_id"))
    return make_error(Errc::invalid_argument, "spool " + path + " has no header line");
  s.run_id_ = h.value("run_id", std::int64_t{0});
  s.job_id_ = h.value("job_id", std::int64_t{0});
  s.token_ = h.value("fencing_token", std::int64_t{0});
  std::vector<Event> all;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) break;  // a torn tail: nothing after it is valid
    if (j.contains("acked")) {
      s.acked_ = std::max(s.acked_, j["acked"].get<std::int64_t>());
      continue;
    }
    Event e = event_from_json(j);
    if (e.seq != s.last_seq_ + 1) break;  // keeps the no-gap invariant even on a damaged file
    s.last_seq_ = e.seq;
    all.push_back(std::move(e));
  }
  for (auto& e : all)
    if (e.seq > s.acked_) s.unacked_.push_back(std::move(e));
  in.close();
  s.fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (s.fd_ < 0) return io_error("cannot reopen spool", path);
  return s;
}

std::vector<std::string> RunSpool::list(const std::string& dir) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    auto name = entry.path().filename().string();
    if (name.rfind("run-", 0) != 0 || entry.path().extension() != ".jsonl") continue;
    try {
      found.emplace_back(std::stoll(name.substr(4)), entry.path().string());
    } catch (...) {  // a stray file with a run- prefix: not ours
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [_, p] : found) out.push_back(p);
  return out;
}

RunSpool::RunSpool(RunSpool&& o) noexcept { *this = std::move(o); }

RunSpool& RunSpool::operator=(RunSpool&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    fd_ = o.fd_;
    o.fd_ = -1;
    run_id_ = o.run_id_;
    job_id_ = o.job_id_;
    token_ = o.token_;
    acked_ = o.acked_;
    last_seq_ = o.last_seq_;
    unacked_ = std::move(o.unacked_);
  }
  return *this;
}

RunSpool::~RunSpool() {
  if (fd_ >= 0) ::close(fd_);
}

Result<void> RunSpool::write_lines(const std::string& text) {
  std::size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd_, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error("cannot write spool", path_);
    }
    off += static_cast<std::size_t>(n);
  }
  if (::fsync(fd_) != 0) return io_error("cannot fsync spool", path_);
  return ok_result();
}

Result<void> RunSpool::append(const std::vector<Event>& events) {
  if (events.empty()) return ok_result();
  std::string text;
  std::int64_t seq = last_seq_;
  for (const auto& e : events) {
    if (e.seq != seq + 1) std::abort();  // the numbering is the caller's invariant
    seq = e.seq;
    text += to_json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text += '\n';
  }
  if (auto r = write_lines(text); !r) return r;
  last_seq_ = seq;
  unacked_.insert(unacked_.end(), events.begin(), events.end());
  return ok_result();
}

Result<void> RunSpool::ack(std::int64_t contiguous) {
  contiguous = std::min(contiguous, last_seq_);  // the server cannot hold what we never sent
  if (contiguous <= acked_) return ok_result();
  if (auto r = write_lines(nlohmann::json{{"acked", contiguous}}.dump() + "\n"); !r) return r;
  acked_ = contiguous;
  auto it = std::find_if(unacked_.begin(), unacked_.end(),
                         [&](const Event& e) { return e.seq > contiguous; });
  unacked_.erase(unacked_.begin(), it);
  return ok_result();
}

std::vector<Event> RunSpool::pending(std::size_t max) const {
  std::size_t n = std::min(max, unacked_.size());
  return {unacked_.begin(), unacked_.begin() + static_cast<std::ptrdiff_t>(n)};
}

void RunSpool::remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::error_code ec;
  fs::remove(path_, ec);
}

}  // namespace kfleet::agent
