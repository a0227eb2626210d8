// Jobs: submission, queries and state changes. The code is shared/jobs.inc, which both backends
// compile; what SQLite does differently is below it.
#include <set>

#include "shared/in_flight_sql.hpp"
#include "sqlite_store.hpp"

namespace kfleet::store::sqlite {

#include "shared/jobs.inc"

// submit_job inside its transaction: the checks, then the bundle, then the job and the lease
// planned for it. In process, each read costs no round trip.
Result<Submitted> SqliteStore::submit_checked(const Submission& s, const nlohmann::json& submitted,
                                              TimeMs now) {
  auto checks = send_submit_checks(s);
  Submitted out;
  if (receive_submit_checks(checks, s, out)) return out;
  if (!s.bundle_body.empty()) {
    if (auto stored = store_bundle(s.job.bundle_hash, s.bundle_body); !stored)
      return stored.error();
  }
  out.job = insert_job(s.job, submitted, now);
  if (s.grant && s.grant->ttl_ms > 0) {
    // Refused (checked before it writes), the job stays queued for the next pass.
    JobRecord leased;
    if (auto lease = grant_in_transaction(out.job.id, s.grant->agent_id, s.grant->ttl_ms, now,
                                          s.grant->decision, &leased)) {
      out.lease = *lease;
      out.job = std::move(leased);
    }
  }
  return out;
}

}  // namespace kfleet::store::sqlite
