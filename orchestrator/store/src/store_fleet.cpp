// Baselines (with their history) and fleet regression runs.
#include <cstdlib>

#include "sqlite_store.hpp"

namespace kfleet::store::sqlite {

namespace {

constexpr const char* kBaselineColumns =
    "id, kernel, case_name, gpu_class, simulated, run_id, job_id, median_us, samples_us, reason, "
    "set_ms, superseded_ms, set_by";
constexpr const char* kRegressionColumns = "id, suite, state, spec, cells, created_ms, updated_ms";

Baseline read_baseline(const Stmt& q) {
  Baseline b;
  b.id = q.i64(0);
  b.kernel = q.text(1);
  b.case_name = q.text(2);
  b.gpu_class = q.text(3);
  b.simulated = q.boolean(4);
  b.run_id = q.i64(5);
  b.job_id = q.i64(6);
  // Stmt reads no doubles; SQLite renders a REAL as text with 15 significant digits.
  b.median_us = std::strtod(q.text(7).c_str(), nullptr);
  b.samples_us = parse_json(q.text(8));
  if (!b.samples_us.is_array()) b.samples_us = nlohmann::json::array();
  b.reason = q.text(9);
  b.set_ms = q.i64(10);
  b.superseded_ms = q.i64(11);
  b.set_by = q.text(12);
  return b;
}

RegressionRecord read_regression(const Stmt& q) {
  RegressionRecord r;
  r.id = q.i64(0);
  r.suite = q.text(1);
  r.state = q.text(2);
  r.spec = parse_json(q.text(3));
  r.cells = parse_json(q.text(4));
  if (!r.cells.is_array()) r.cells = nlohmann::json::array();
  r.created_ms = q.i64(5);
  r.updated_ms = q.i64(6);
  return r;
}

}  // namespace

Result<Baseline> SqliteStore::set_baseline(const Baseline& b, TimeMs now) {
  if (b.kernel.empty())
    return make_error(Errc::invalid_argument, "a baseline needs a kernel (the job's campaign or name)");
  if (b.median_us <= 0)
    return make_error(Errc::invalid_argument,
                      "a baseline needs a timing result (median_us > 0); run " +
                          std::to_string(b.run_id) + " has none");
  return db_->transaction([&]() -> Result<Baseline> {
    db_->prepare("UPDATE baselines SET superseded_ms = ? WHERE kernel = ? AND case_name = ? AND "
                 "gpu_class = ? AND simulated = ? AND superseded_ms = 0")
        .args(now, b.kernel, b.case_name, b.gpu_class, b.simulated)
        .run();
    db_->prepare("INSERT INTO baselines (kernel, case_name, gpu_class, simulated, run_id, job_id, "
                 "median_us, samples_us, reason, set_ms, superseded_ms, set_by) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)")
        .args(b.kernel, b.case_name, b.gpu_class, b.simulated, b.run_id, b.job_id, b.median_us,
              dump_json(b.samples_us.is_array() ? b.samples_us : nlohmann::json::array()),
              b.reason, now, b.set_by)
        .run();
    Baseline out = b;
    out.id = db_->last_insert_id();
    out.set_ms = now;
    out.superseded_ms = 0;
    if (!out.samples_us.is_array()) out.samples_us = nlohmann::json::array();
    return out;
  });
}

std::optional<Baseline> SqliteStore::current_baseline(const std::string& kernel,
                                                      const std::string& case_name,
                                                      const std::string& gpu_class,
                                                      bool simulated) {
  static const std::string sql =
      std::string("SELECT ") + kBaselineColumns +
      " FROM baselines WHERE kernel = ? AND case_name = ? AND gpu_class = ? AND simulated = ? "
      "AND superseded_ms = 0 ORDER BY id DESC LIMIT 1";
  return or_die("current_baseline", [&]() -> std::optional<Baseline> {
    auto q = db_->prepare(sql);
    q.args(kernel, case_name, gpu_class, simulated);
    if (!q.step()) return std::nullopt;
    return read_baseline(q);
  });
}

std::vector<Baseline> SqliteStore::baseline_history(const std::string& kernel) {
  static const std::string sql = std::string("SELECT ") + kBaselineColumns +
                                 " FROM baselines WHERE (? = '' OR kernel = ?) ORDER BY id DESC";
  return or_die("baseline_history", [&] {
    auto q = db_->prepare(sql);
    q.args(kernel, kernel);
    std::vector<Baseline> out;
    while (q.step()) out.push_back(read_baseline(q));
    return out;
  });
}

Result<RegressionRecord> SqliteStore::create_regression(const std::string& suite,
                                                        const nlohmann::json& spec, TimeMs now) {
  if (suite.empty())
    return make_error(Errc::invalid_argument, "a regression run needs the suite's name (suite:)");
  return db_->transaction([&]() -> Result<RegressionRecord> {
    db_->prepare("INSERT INTO regressions (suite, state, spec, cells, created_ms, updated_ms) "
                 "VALUES (?, 'running', ?, '[]', ?, ?)")
        .args(suite, dump_json(spec), now, now)
        .run();
    RegressionRecord r;
    r.id = db_->last_insert_id();
    r.suite = suite;
    r.spec = spec;
    r.created_ms = r.updated_ms = now;
    return r;
  });
}

Result<void> SqliteStore::add_regression_job(const RegressionJob& rj) {
  return db_->transaction([&]() -> Result<void> {
    auto q = db_->prepare("SELECT 1 FROM regressions WHERE id = ?");
    q.args(rj.regression_id);
    if (!q.step())
      return make_error(Errc::not_found, "no regression run " + std::to_string(rj.regression_id));
    if (!load_job(rj.job_id))
      return make_error(Errc::not_found, "no job " + std::to_string(rj.job_id));
    db_->prepare("INSERT OR REPLACE INTO regression_jobs (regression_id, job_id, kernel, gpu_class) "
                 "VALUES (?, ?, ?, ?)")
        .args(rj.regression_id, rj.job_id, rj.kernel, rj.gpu_class)
        .run();
    return ok_result();
  });
}

std::vector<RegressionJob> SqliteStore::regression_jobs(std::int64_t regression_id) {
  return or_die("regression_jobs", [&] {
    auto q = db_->prepare("SELECT regression_id, job_id, kernel, gpu_class FROM regression_jobs "
                          "WHERE regression_id = ? ORDER BY job_id");
    q.args(regression_id);
    std::vector<RegressionJob> out;
    while (q.step()) out.push_back({q.i64(0), q.i64(1), q.text(2), q.text(3)});
    return out;
  });
}

std::int64_t SqliteStore::regression_of_job(std::int64_t job_id) {
  return or_die("regression_of_job", [&]() -> std::int64_t {
    auto q = db_->prepare("SELECT regression_id FROM regression_jobs WHERE job_id = ? LIMIT 1");
    q.args(job_id);
    return q.step() ? q.i64(0) : 0;
  });
}

Result<RegressionRecord> SqliteStore::update_regression(std::int64_t id, const std::string& state,
                                                        const nlohmann::json& cells, TimeMs now) {
  return db_->transaction([&]() -> Result<RegressionRecord> {
    db_->prepare("UPDATE regressions SET state = ?, cells = ?, updated_ms = ? WHERE id = ?")
        .args(state, dump_json(cells), now, id)
        .run();
    if (db_->changes() == 0)
      return make_error(Errc::not_found, "no regression run " + std::to_string(id));
    auto q = db_->prepare(std::string("SELECT ") + kRegressionColumns +
                          " FROM regressions WHERE id = ?");
    q.args(id);
    q.step();
    return read_regression(q);
  });
}

std::optional<RegressionRecord> SqliteStore::get_regression(std::int64_t id) {
  return or_die("get_regression", [&]() -> std::optional<RegressionRecord> {
    auto q = db_->prepare(std::string("SELECT ") + kRegressionColumns +
                          " FROM regressions WHERE id = ?");
    q.args(id);
    if (!q.step()) return std::nullopt;
    return read_regression(q);
  });
}

std::vector<RegressionRecord> SqliteStore::list_regressions(int limit) {
  return or_die("list_regressions", [&] {
    auto q = db_->prepare(std::string("SELECT ") + kRegressionColumns +
                          " FROM regressions ORDER BY id DESC LIMIT ?");
    q.args(limit > 0 ? limit : 100);
    std::vector<RegressionRecord> out;
    while (q.step()) out.push_back(read_regression(q));
    return out;
  });
}

}  // namespace kfleet::store::sqlite
