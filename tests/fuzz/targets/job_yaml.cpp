// A job file as `kfleet submit` and kfleetd read it: YAML text -> JobSpec (strict parser, errors
// with file:line:column). A spec that parses must survive the wire form unchanged: to_json,
// then job_spec_from_json (what kfleetd does with a JSON job), then to_json again.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "kfleet/common/jobspec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kfleet;
  const std::string text(reinterpret_cast<const char*>(data), size);
  SpecParse p = parse_job_spec(text, "job.yaml");
  if (!p.ok()) {
    fuzz::check(!p.issues.empty(), "a refused job file must say why");
    (void)p.error_text();
    return 0;
  }
  const nlohmann::json wire = to_json(*p.spec);
  auto back = job_spec_from_json(wire);
  if (!back) fuzz::broken("a parsed job does not parse from its own JSON: " + back.error().message);
  const nlohmann::json again = to_json(*back);
  fuzz::check(again == wire, "JSON round trip changed the job:\n" + wire.dump() + "\n" + again.dump());
  fuzz::check(job_content_hash(*p.spec, "sha256:0") == job_content_hash(*back, "sha256:0"),
              "the content hash changed over the JSON round trip");
  (void)host_exclusive(*p.spec);
  return 0;
}
