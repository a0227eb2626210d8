// A job as JSON on the wire (kfleetd's POST /api/v1/jobs "spec", the store's form): body ->
// nlohmann::json -> job_spec_from_json. An accepted spec must be a fixed point of
// to_json/job_spec_from_json.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "kfleet/common/jobspec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kfleet;
  const auto doc = fuzz::json_input(data, size);
  if (!doc) return 0;
  auto spec = job_spec_from_json(*doc);
  if (fuzz::refused(spec, "a refused JSON job must say why")) return 0;
  const nlohmann::json wire = to_json(*spec);
  auto back = job_spec_from_json(wire);
  if (!back) fuzz::broken("an accepted job does not parse from its own JSON: " + back.error().message);
  fuzz::check(to_json(*back) == wire, "JSON round trip changed the job: " + wire.dump());
  (void)job_content_hash(*spec, "sha256:0");
  return 0;
}
