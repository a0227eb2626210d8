#pragma once
// kfleet_bench --db both: the same bench on SQLite and on PostgreSQL in one run, and a table of
// the ratios. Each backend runs in a child kfleet_bench (its own kfleetd and database), so the
// two runs share nothing but the machine.
#include <memory>
#include <string>

namespace kfleet::bench {

// Runs argv[0] with the given arguments once per backend (--db sqlite, --db postgres), prints
// each run's output and then the ratio table. Returns the exit status.
int compare_backends(int argc, char** argv);

// What --db names: a SQLite file in the bench's temp dir ("sqlite"), a scratch PostgreSQL
// server started for the run ("postgres"), or an existing server (a postgresql:// URL).
// Returns kfleetd's --db value, keeping a scratch server alive in `keep`; exits on errors.
std::string backend_db(const std::string& backend, const std::string& dir,
                       std::shared_ptr<void>& keep);

}  // namespace kfleet::bench
