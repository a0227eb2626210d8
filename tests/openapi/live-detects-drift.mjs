// The live check must bite: runs tests/openapi/live.mjs against a copy of openapi.yaml (in a
// temp dir) whose schemas no longer match what kfleetd answers, and passes only if live.mjs
// fails and names each broken response:
//   - Health.status becomes an integer (kfleetd sends a string);
//   - WhoAmI loses its token_id property (kfleetd sends it: an undeclared field);
//   - GET /api/v1/runs/{id} loses its documented 404 (kfleetd answers one).
// Usage: node tests/openapi/live-detects-drift.mjs --kfleetd PATH/kfleetd
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const i = process.argv.indexOf("--kfleetd");
const kfleetd = i > 0 ? process.argv[i + 1] : "";
if (!kfleetd) {
  console.error("usage: node tests/openapi/live-detects-drift.mjs --kfleetd PATH/kfleetd");
  process.exit(2);
}

const original = readFileSync(join(here, "..", "..", "orchestrator", "api", "openapi.yaml"), "utf8");
const breaks = [
  ["        status: {type: string, example: ok}\n", "        status: {type: integer}\n",
   /GET \/api\/v1\/health 200 application\/json: the body does not match[\s\S]*?\/status must be integer/],
  ["        token_id: {type: integer}\n", "",
   /GET \/api\/v1\/whoami 200 application\/json: the body does not match[\s\S]*?additional properties: 'token_id'/],
];
let text = original;
for (const [from, to] of breaks) {
  if (!text.includes(from)) { console.error(`drift: openapi.yaml no longer holds ${JSON.stringify(from)}; update this test`); process.exit(1); }
  text = text.replace(from, to);
}
// GET /api/v1/runs/{id}: drop its 404.
const runOp = text.indexOf("  /api/v1/runs/{id}:\n");
const run404 = text.indexOf('        "404": {$ref: "#/components/responses/NotFound"}\n', runOp);
if (runOp < 0 || run404 < 0) { console.error("drift: cannot find GET /api/v1/runs/{id}'s 404; update this test"); process.exit(1); }
text = text.slice(0, run404) + text.slice(run404 + '        "404": {$ref: "#/components/responses/NotFound"}\n'.length);
breaks.push([null, null, /GET \/api\/v1\/runs\/\{id\} answered 404, which openapi\.yaml does not document/]);

const tmp = mkdtempSync(join(tmpdir(), "kfleet-openapi-drift-"));
const spec = join(tmp, "openapi.yaml");
writeFileSync(spec, text);
const r = spawnSync(process.execPath, [join(here, "live.mjs"), "--kfleetd", kfleetd, "--spec", spec],
                    { encoding: "utf8", timeout: 120000 });
const out = (r.stdout || "") + (r.stderr || "");
let ok = true;
if (r.status !== 1) { console.error(`drift: live.mjs exited ${r.status} on a broken document (want 1):\n${out.slice(-3000)}`); ok = false; }
for (const [, , want] of breaks)
  if (!want.test(out)) { console.error(`drift: live.mjs did not report ${want}:\n${out.slice(-3000)}`); ok = false; }
rmSync(tmp, { recursive: true, force: true });
for (const m of out.matchAll(/kfleetd logs kept in (\S+)/g)) rmSync(m[1], { recursive: true, force: true });
if (ok) console.log("drift: live.mjs fails on each schema that no longer matches kfleetd's answers");
process.exit(ok ? 0 : 1);
