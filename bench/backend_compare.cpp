#include "backend_compare.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <vector>

#include "bench_kfleetd.hpp"
#include "support.hpp"
#ifdef KFLEET_HAVE_POSTGRESQL
#include "kfleet/store/pg_scratch.hpp"
#endif

namespace kfleet::bench {
namespace {

struct Figure {
  double value = 0;
  std::string unit;
};

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  return s.substr(b);
}

// The rows of the markdown table a kfleet_bench run prints: "metric at <depth> queued" ->
// measured figure, one per depth column (the unit is the metric's, in parentheses).
std::vector<std::pair<std::string, Figure>> parse_table(const std::string& out) {
  std::vector<std::pair<std::string, Figure>> rows;
  std::vector<std::string> header;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::size_t p = 1;
    while (p < line.size()) {
      auto q = line.find('|', p);
      if (q == std::string::npos) break;
      cells.push_back(trim(line.substr(p, q - p)));
      p = q + 1;
    }
    if (cells.size() < 2) continue;
    if (cells[0].rfind("metric", 0) == 0) {
      header = cells;
      continue;
    }
    std::string unit;
    if (auto a = cells[0].find('('); a != std::string::npos)
      unit = cells[0].substr(a + 1, cells[0].find_first_of(",)", a) - a - 1);
    // Depth columns: every one the header names "... queued".
    for (std::size_t i = 1; i < cells.size() && i < header.size(); ++i) {
      if (header[i].find("queued") == std::string::npos) continue;
      std::string v;
      for (char c : cells[i])
        if (c != ',') v += c;
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (end == v.c_str()) continue;
      rows.push_back({cells[0] + " at " + header[i], {x, unit}});
    }
  }
  return rows;
}

}  // namespace

std::string backend_db(const std::string& backend, const std::string& dir,
                       std::shared_ptr<void>& keep) {
  if (backend == "sqlite") return dir + "/bench.db";
  if (backend.rfind("postgresql://", 0) == 0 || backend.rfind("postgres://", 0) == 0) {
    // The URL goes on kfleetd's command line and into the bench's output: a password in it
    // would be in `ps` and the logs. libpq reads PGPASSWORD / ~/.pgpass instead.
    const auto rest = backend.substr(backend.find("://") + 3);
    const auto at = rest.find('@');
    if (at != std::string::npos && rest.substr(0, at).find(':') != std::string::npos) {
      std::fprintf(stderr,
                   "bench: the --db URL carries a password; leave it out and set PGPASSWORD "
                   "(or a ~/.pgpass entry) instead\n");
      std::exit(2);
    }
    return backend;
  }
  if (backend == "postgres") {
#ifdef KFLEET_HAVE_POSTGRESQL
    auto s = kfleet::store::ScratchPostgres::start(scratch_pg_settings());
    if (!s.ok()) {
      std::fprintf(stderr, "bench: %s\n", s.error().message.c_str());
      std::exit(1);
    }
    auto url = (*s)->create_database("bench");
    if (!url.ok()) {
      std::fprintf(stderr, "bench: %s\n", url.error().message.c_str());
      std::exit(1);
    }
    keep = std::shared_ptr<kfleet::store::ScratchPostgres>(std::move(*s));
    return *url;
#else
    std::fprintf(stderr, "bench: this build has no PostgreSQL support (-DKFLEET_WITH_POSTGRESQL=OFF)\n");
    std::exit(2);
#endif
  }
  std::fprintf(stderr,
               "bench: --db wants sqlite, postgres (a scratch server), both, or a "
               "postgresql:// URL; got '%s'\n",
               backend.c_str());
  std::exit(2);
}

int compare_backends(int argc, char** argv) {
  std::map<std::string, std::vector<std::pair<std::string, Figure>>> figures;
  for (const std::string backend : {"sqlite", "postgres"}) {
    std::vector<std::string> args = {argv[0]};
    for (int i = 1; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--db") && i + 1 < argc) {
        ++i;
        continue;
      }
      args.emplace_back(argv[i]);
    }
    args.insert(args.end(), {"--db", backend});
    std::printf("== kfleet_bench --db %s\n", backend.c_str());
    std::fflush(stdout);
    auto r = e2e::run_cmd(args, 6 * 3600 * 1000);
    std::fputs(r.output.c_str(), stdout);
    if (r.exit_code != 0) {
      std::fprintf(stderr, "bench: the %s run failed (exit %d)\n", backend.c_str(), r.exit_code);
      return 1;
    }
    figures[backend] = parse_table(r.output);
  }
  std::printf("\n== PostgreSQL vs SQLite (same machine, same arguments; PostgreSQL is a local "
              "scratch server on a unix socket)\n\n");
  std::printf("| metric | SQLite | PostgreSQL | PostgreSQL / SQLite |\n|---|---:|---:|---:|\n");
  // Rows pair up by metric name and occurrence (a bench that prints one table per queue depth
  // repeats its metric names).
  std::map<std::string, int> seen_lite;
  for (const auto& [metric, lite] : figures["sqlite"]) {
    int skip = seen_lite[metric]++;
    // What SQLite does not have (round trips, a server's CPU) is no ratio: its figure is in
    // each table.
    if (metric.find("round trips") != std::string::npos ||
        metric.find("database server") != std::string::npos)
      continue;
    for (const auto& [m2, pg] : figures["postgres"]) {
      if (m2 != metric || skip-- > 0) continue;
      const bool lower_better = lite.unit == "ms" || lite.unit == "s" || lite.unit == "us";
      std::printf("| %s | %.2f %s | %.2f %s | %.2fx (%s is better) |\n", metric.c_str(),
                  lite.value, lite.unit.c_str(), pg.value, pg.unit.c_str(),
                  lite.value > 0 ? pg.value / lite.value : 0.0, lower_better ? "lower" : "higher");
      break;
    }
  }
  return 0;
}

}  // namespace kfleet::bench
