// Live responses against openapi.yaml: starts real kfleetds (loopback, port 0, a fresh SQLite
// file in a temp dir each; one with tight rate limits, one with a simulated cloud out of stock),
// drives every route in the document through the states that produce each status it documents
// (success, 400, 401, 403, 404, 409, 413, 429; 204 for an empty lease poll; the SSE variants of
// the event routes), and validates every body against the response
// schema the document gives for that status and content type, with ajv (JSON Schema) on the
// document as @apidevtools/swagger-parser dereferences it.
//
// It fails when
//   - a response's status is not documented for its route, or its content type is not;
//   - a body does not match its schema, or carries a property its object schema does not
//     declare (objects that list properties are checked as closed: a client generator relies on
//     the declared fields);
//   - a route in openapi.yaml, or one of its documented statuses, got no live sample.
// Usage: node tests/openapi/live.mjs --kfleetd PATH/kfleetd [--spec PATH/openapi.yaml]
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const require = createRequire(join(root, "dashboards", "package.json"));
let SwaggerParser, Ajv, addFormats;
try {
  SwaggerParser = require("@apidevtools/swagger-parser");
  Ajv = require("ajv");
  addFormats = require("ajv-formats");
} catch (e) {
  console.error("openapi-live: npm packages are missing (" + e.message.split("\n")[0] + "): run " +
                "scripts/install-deps.sh (its npm step installs dashboards/ devDependencies)");
  process.exit(1);
}

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const kfleetdBin = arg("--kfleetd");
const specFile = arg("--spec", join(root, "orchestrator", "api", "openapi.yaml"));
if (!kfleetdBin || !existsSync(kfleetdBin)) {
  console.error("usage: node tests/openapi/live.mjs --kfleetd PATH/kfleetd [--spec openapi.yaml]");
  process.exit(2);
}

// ---- the document, dereferenced, and a validator per (route, status, content type) ----------
await SwaggerParser.validate(structuredClone(await SwaggerParser.parse(specFile)));
const api = await SwaggerParser.dereference(specFile);
const ajv = new Ajv({ strict: true, allErrors: true, strictTypes: false });
addFormats(ajv);
ajv.addKeyword("example");

// Objects that declare properties are closed (additionalProperties: false) unless they say
// otherwise; members of an allOf stay open, since each sees only its own part.
function closed(schema, inAllOf = false, seen = new Map()) {
  if (!schema || typeof schema !== "object") return schema;
  if (seen.has(schema)) return seen.get(schema);
  const out = Array.isArray(schema) ? [] : {};
  seen.set(schema, out);
  for (const [k, v] of Object.entries(schema)) {
    if (k === "allOf") out[k] = v.map((s) => closed(s, true, seen));
    else if (k === "properties") out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, closed(s, false, seen)]));
    else if (k === "items") out[k] = closed(v, false, seen);
    else out[k] = v;
  }
  if (!inAllOf && out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

const ops = new Map();  // "GET /api/v1/jobs/{id}" -> {op, regex, params}
for (const [path, item] of Object.entries(api.paths)) {
  for (const [method, op] of Object.entries(item)) {
    if (!["get", "post", "put", "delete", "patch"].includes(method)) continue;
    ops.set(`${method.toUpperCase()} ${path}`, op);
  }
}
const validators = new Map();
function validatorFor(key, status, ctype) {
  const id = `${key} ${status} ${ctype}`;
  if (!validators.has(id)) {
    const schema = ops.get(key).responses[status].content[ctype].schema;
    validators.set(id, ajv.compile(closed(schema)));
  }
  return validators.get(id);
}

// ---- bookkeeping -------------------------------------------------------------------------------
const samples = new Map();  // key -> Set of "status" and "status ctype"
const failures = [];
function fail(msg) { failures.push(msg); console.error("FAIL: " + msg); }
function record(key, status, ctype) {
  if (!samples.has(key)) samples.set(key, new Set());
  samples.get(key).add(String(status));
  if (ctype) samples.get(key).add(`${status} ${ctype}`);
}

// Checks one live answer against the document; returns the parsed JSON body (or text).
function explain(errors) {
  return (errors || []).map((e) => `${e.instancePath || "(body)"} ${e.message}` +
    (e.params?.additionalProperty ? `: '${e.params.additionalProperty}'` : "")).join("\n    ");
}

function check(key, status, ctype, text, headers) {
  const op = ops.get(key);
  if (!op) { fail(`${key}: not in openapi.yaml`); return null; }
  const doc = op.responses[String(status)];
  if (!doc) { fail(`${key} answered ${status}, which openapi.yaml does not document for it: ${text.slice(0, 200)}`); return null; }
  if (!doc.content) {
    if (text.length) fail(`${key} ${status}: documented without a body, but it had one: ${text.slice(0, 200)}`);
    record(key, status, "");
    return null;
  }
  if (!doc.content[ctype]) {
    fail(`${key} ${status}: content type '${ctype}' is not documented (documented: ${Object.keys(doc.content).join(", ")})`);
    return null;
  }
  for (const [h, hdoc] of Object.entries(doc.headers || {})) {
    const v = headers.get(h);
    if (v === null) fail(`${key} ${status}: documented header ${h} is missing`);
    else if (hdoc.schema?.type === "integer" && !/^[0-9]+$/.test(v)) fail(`${key} ${status}: header ${h}='${v}' is not an integer`);
  }
  let body = text;
  if (ctype === "application/json") {
    try { body = JSON.parse(text); } catch (e) { fail(`${key} ${status}: body is not JSON: ${text.slice(0, 200)}`); return null; }
  }
  const v = validatorFor(key, String(status), ctype);
  if (!v(body)) {
    fail(`${key} ${status} ${ctype}: the body does not match its schema in openapi.yaml:\n    ` +
         explain(v.errors) + `\n    body: ${text.slice(0, 400)}`);
  }
  record(key, status, ctype);
  return body;
}

// ---- a real kfleetd ----------------------------------------------------------------------------
const tmp = mkdtempSync(join(tmpdir(), "kfleet-openapi-live-"));
const children = [];
const secret = (p) => p + randomBytes(32).toString("hex");

async function startKfleetd(name, flags) {
  const dir = join(tmp, name);
  const admin = secret("kft_"), enrol = secret("kfe_");
  const { mkdirSync, openSync } = await import("node:fs");
  mkdirSync(dir);
  const log = openSync(join(dir, "kfleetd.log"), "w");
  const child = spawn(kfleetdBin, ["--listen", "127.0.0.1:0", "--port-file", join(dir, "port"),
                                   "--db", join(dir, "kfleet.db"), ...flags],
                      { env: { ...process.env, KFLEET_ADMIN_TOKEN: admin, KFLEET_ENROL_TOKEN: enrol },
                        stdio: ["ignore", log, log] });
  children.push(child);
  for (let i = 0; i < 200; i++) {
    if (existsSync(join(dir, "port")) && readFileSync(join(dir, "port"), "utf8").trim()) break;
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const port = existsSync(join(dir, "port")) ? readFileSync(join(dir, "port"), "utf8").trim() : "";
  if (!port) throw new Error(`kfleetd did not start: ${readFileSync(join(dir, "kfleetd.log"), "utf8").slice(-2000)}`);
  return { url: `http://127.0.0.1:${port}`, admin, enrol, dir };
}

function makeClient(server) {
  // call("POST /api/v1/jobs/{id}/cancel", {id: 3}, {token, body, query, raw, accept})
  return async function call(key, params = {}, o = {}) {
    const [method, tmpl] = key.split(" ");
    let path = tmpl.replace(/\{(\w+)\}/g, (_, p) => encodeURIComponent(String(params[p])));
    if (o.query) path += "?" + new URLSearchParams(o.query).toString();
    const headers = {};
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    if (o.accept) headers.accept = o.accept;
    let body;
    if (o.raw !== undefined) { body = o.raw; headers["content-type"] = "application/json"; }
    else if (o.body !== undefined) { body = JSON.stringify(o.body); headers["content-type"] = "application/json"; }
    else if (method === "POST") { body = "{}"; headers["content-type"] = "application/json"; }
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), o.timeoutMs ?? 15000);
    try {
      const res = await fetch(server.url + path, { method, headers, body, signal: ac.signal });
      const ctype = (res.headers.get("content-type") || "").split(";")[0].trim();
      let text = "";
      if (ctype === "text/event-stream") {
        text = await readStream(res, o.untilFirstEvent);
        ac.abort();
      } else {
        text = await res.text();
      }
      const parsed = check(key, res.status, res.status === 204 ? "" : ctype, text, res.headers);
      if (o.expect !== undefined && res.status !== o.expect)
        fail(`${key} ${JSON.stringify(params)}: expected ${o.expect}, got ${res.status}: ${text.slice(0, 300)}`);
      if (ctype === "text/event-stream") checkEventStream(key, text);
      return { status: res.status, body: parsed, text };
    } catch (e) {
      throw new Error(`${key} ${JSON.stringify(params)}: ${e.message}`);
    } finally {
      clearTimeout(timer);
    }
  };
}

// SSE: read until the stream ends (event: end) or, for the endless feed, the first event.
async function readStream(res, untilFirstEvent) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let text = "";
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value, { stream: true });
    if (untilFirstEvent && /\ndata: .*\n\n/.test("\n" + text)) break;
    if (/(^|\n)event: end\n/.test(text)) break;
  }
  try { await reader.cancel(); } catch {}
  return text;
}

// Each `data:` of an event stream (but the final `end`) is an Event as the JSON variant gives it.
function checkEventStream(key, text) {
  const eventSchema = api.components.schemas.Event;
  const v = ajv.compile(closed(eventSchema));
  let n = 0;
  for (const block of text.split("\n\n")) {
    const lines = block.split("\n");
    const type = (lines.find((l) => l.startsWith("event: ")) || "").slice(7);
    const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
    if (!data || type === "end") continue;
    let ev;
    try { ev = JSON.parse(data); } catch { fail(`${key} SSE: data is not JSON: ${data.slice(0, 200)}`); continue; }
    if (!v(ev)) fail(`${key} SSE event does not match Event: ${explain(v.errors)}: ${data.slice(0, 300)}`);
    ++n;
  }
  if (n === 0) fail(`${key} SSE: no event in the stream: ${text.slice(0, 300)}`);
}

// ---- the walk ----------------------------------------------------------------------------------
const JOB_SPEC = (name, extra = "") =>
  `name: ${name}\ncampaign: livecamp\ntarget: {gpu: L4}\n` +
  `kernel:\n  family: attention\n  language: cuda\n  sources: [k.cu]\n` +
  `simulate: {time_us: 50, stage_ms: 1}\n${extra}`;
const BUNDLE = { files: [{ path: "k.cu", data_b64: Buffer.from("__global__ void k() {}\n").toString("base64") }] };
const ENROL = (name) => ({ name, region: "r1", backend: "simulated",
                           gpus: [{ gpu_class: "L4", arch: "sm_89", vendor: "simulated", name: "sim L4" }] });
const MISSING = 999999;

async function mainWalk() {
  const s = await startKfleetd("main", []);
  const call = makeClient(s);
  const A = s.admin;

  await call("GET /api/v1/health", {}, { expect: 200 });

  // Tokens (admin), one per scope.
  const rita = (await call("POST /api/v1/tokens", {}, { token: A, body: { user: "rita", scope: "read" }, expect: 201 })).body.token.token;
  const sam = (await call("POST /api/v1/tokens", {}, { token: A, body: { user: "sam", scope: "submit", note: "live" }, expect: 201 })).body.token.token;
  await call("POST /api/v1/tokens", {}, { token: A, body: { scope: "read" }, expect: 400 });
  await call("GET /api/v1/tokens", {}, { token: A, expect: 200 });
  await call("GET /api/v1/whoami", {}, { token: rita, expect: 200 });
  const spare = (await call("POST /api/v1/tokens", {}, { token: A, body: { user: "tom", scope: "read" }, expect: 201 })).body.token;
  await call("POST /api/v1/tokens/{id}/revoke", { id: spare.id }, { token: A, expect: 200 });
  await call("POST /api/v1/tokens/{id}/revoke", { id: MISSING }, { token: A, expect: 404 });

  // Agents.
  const a = (await call("POST /api/v1/agents/enrol", {}, { token: s.enrol, body: ENROL("live-a"), expect: 201 })).body;
  const b = (await call("POST /api/v1/agents/enrol", {}, { token: s.enrol, body: ENROL("live-b"), expect: 201 })).body;
  await call("POST /api/v1/agents/enrol", {}, { token: s.enrol, body: { name: "x" }, expect: 400 });
  // Limited enrolment tokens: a single-use one lets one agent in and refuses the next (401); an
  // instance-bound one refuses another instance (403).
  const once = (await call("POST /api/v1/enrol-tokens", {}, { token: A, body: { name: "live once", uses: 1, expires_in_s: 3600 }, expect: 201 })).body.enrol_token;
  const onceAgent = (await call("POST /api/v1/agents/enrol", {}, { token: once.token, body: ENROL("live-once"), expect: 201 })).body;
  await call("POST /api/v1/agents/enrol", {}, { token: once.token, body: ENROL("live-twice"), expect: 401 });
  const bound = (await call("POST /api/v1/enrol-tokens", {}, { token: A, body: { name: "live bound", instance_id: "i-live" }, expect: 201 })).body.enrol_token;
  await call("POST /api/v1/agents/enrol", {}, { token: bound.token, body: { ...ENROL("live-bound"), instance_id: "i-other" }, expect: 403 });
  await call("POST /api/v1/enrol-tokens", {}, { token: A, body: { uses: 1 }, expect: 400 });
  await call("GET /api/v1/enrol-tokens", {}, { token: A, expect: 200 });
  await call("POST /api/v1/enrol-tokens/{id}/revoke", { id: bound.id }, { token: A, expect: 200 });
  await call("POST /api/v1/enrol-tokens/{id}/revoke", { id: MISSING }, { token: A, expect: 404 });
  const agentsNow = (await call("GET /api/v1/agents", {}, { token: A, expect: 200 })).body.agents;
  const shown = agentsNow.find((x) => x.id === onceAgent.agent_id);
  if (shown?.enrolled_by?.kind !== "enrol_token" || shown.enrolled_by.enrol_token_id !== once.id)
    fail(`an agent let in by enrolment token ${once.id} should say so in enrolled_by: ${JSON.stringify(shown)}`);
  // Nothing queued yet: an empty poll answers 204.
  await call("POST /api/v1/agents/{id}/lease", { id: b.agent_id }, { token: b.token, query: { wait_ms: 0 }, expect: 204 });

  // A job, leased, reported on and finished by agent a.
  const job = (await call("POST /api/v1/jobs", {}, { token: sam, body: { spec_yaml: JOB_SPEC("livecamp/base"), source_name: "job.yaml", bundle: BUNDLE }, expect: 201 })).body.job;
  await call("POST /api/v1/jobs", {}, { token: sam, body: { spec_yaml: "name: [", source_name: "bad.yaml", bundle: BUNDLE }, expect: 400 });
  // A child submitted as parent + change: of a job that does not exist (404), and of one that is
  // not its campaign's current best yet (409 not_current_best).
  const CHILD = JOB_SPEC("livecamp/child", "parent: livecamp/base\n");
  await call("POST /api/v1/jobs", {}, { token: sam, body: { spec_yaml: CHILD, source_name: "job.yaml", bundle: BUNDLE, parent_job: MISSING }, expect: 404 });
  await call("POST /api/v1/jobs", {}, { token: sam, body: { spec_yaml: CHILD, source_name: "job.yaml", bundle: BUNDLE, parent_job: job.id }, expect: 409 });
  const lost = (await call("POST /api/v1/agents/{id}/lease", { id: a.agent_id }, { token: a.token, query: { wait_ms: 5000 }, expect: 200 })).body.lease;
  // As if that answer had been cut off on its way: the agent asks again, and its run ends as lost
  // and the job comes back to it under a new run and fencing token.
  const lease = (await call("POST /api/v1/agents/{id}/lease", { id: a.agent_id }, { token: a.token, query: { wait_ms: 5000 }, expect: 200 })).body.lease;
  if (lease.job_id !== lost.job_id || lease.run_id === lost.run_id || lease.fencing_token === lost.fencing_token)
    fail(`a second poll did not lease the job again under a new run: ${JSON.stringify(lost)} then ${JSON.stringify(lease)}`);
  const run = lease.run_id, ft = lease.fencing_token;
  await call("POST /api/v1/agents/{id}/heartbeat", { id: a.agent_id }, { token: a.token, body: { run_id: run, fencing_token: ft }, expect: 200 });
  // A stale fencing token is no error for a heartbeat: the answer says the lease is gone.
  const stale = await call("POST /api/v1/agents/{id}/heartbeat", { id: a.agent_id }, { token: a.token, body: { run_id: run, fencing_token: ft + 7 }, expect: 200 });
  if (stale.body?.lease_valid !== false) fail(`a heartbeat with a stale fencing token kept the lease: ${stale.text}`);
  await call("POST /api/v1/agents/{id}/heartbeat", { id: a.agent_id }, { token: a.token, raw: "not json", expect: 400 });
  await call("GET /api/v1/bundles/{hash}", { hash: lease.bundle_hash }, { token: a.token, expect: 200 });
  await call("GET /api/v1/bundles/{hash}", { hash: lease.bundle_hash }, { token: rita, expect: 200 });
  await call("GET /api/v1/bundles/{hash}", { hash: "0".repeat(64) }, { token: rita, expect: 404 });
  const ev = [{ seq: 1, type: "stage.started", data: { stage: "build" } },
              { seq: 2, type: "stage.finished", data: { stage: "build", ok: true } }];
  await call("POST /api/v1/runs/{id}/events", { id: run }, { token: a.token, body: { fencing_token: ft, events: ev }, expect: 200 });
  await call("POST /api/v1/runs/{id}/events", { id: run }, { token: a.token, body: { fencing_token: ft }, expect: 400 });
  await call("POST /api/v1/runs/{id}/events", { id: run }, { token: a.token, body: { fencing_token: ft + 7, events: ev }, expect: 409 });
  await call("POST /api/v1/runs/{id}/events", { id: MISSING }, { token: a.token, body: { fencing_token: ft, events: ev }, expect: 404 });
  await call("POST /api/v1/runs/{id}/finish", { id: run }, { token: a.token, body: { fencing_token: ft }, expect: 400 });
  const verdict = { outcome: "passed", perf: "", median_us: 101.5, simulated: true, reason: "simulated" };
  await call("POST /api/v1/runs/{id}/finish", { id: run }, { token: a.token, body: { fencing_token: ft, verdict }, expect: 200 });
  await call("POST /api/v1/runs/{id}/finish", { id: run }, { token: a.token, body: { fencing_token: ft, verdict }, expect: 409 });
  await call("POST /api/v1/runs/{id}/finish", { id: MISSING }, { token: a.token, body: { fencing_token: ft, verdict }, expect: 404 });

  // Reads, JSON and SSE.
  await call("GET /api/v1/jobs", {}, { token: rita, expect: 200 });
  await call("GET /api/v1/jobs", {}, { token: rita, query: { state: "nonsense" }, expect: 400 });
  await call("GET /api/v1/jobs/{id}", { id: job.id }, { token: rita, expect: 200 });
  await call("GET /api/v1/jobs/{id}", { id: MISSING }, { token: rita, expect: 404 });
  await call("GET /api/v1/jobs/{id}/events", { id: job.id }, { token: rita, expect: 200 });
  await call("GET /api/v1/jobs/{id}/events", { id: job.id }, { token: rita, accept: "text/event-stream", expect: 200 });
  await call("GET /api/v1/jobs/{id}/events", { id: MISSING }, { token: rita, expect: 404 });
  await call("GET /api/v1/events", {}, { token: rita, query: { after: 0 }, expect: 200 });
  await call("GET /api/v1/events", {}, { token: rita, query: { after: 0 }, accept: "text/event-stream", untilFirstEvent: true, expect: 200 });
  await call("GET /api/v1/runs/{id}", { id: run }, { token: rita, expect: 200 });
  await call("GET /api/v1/runs/{id}", { id: MISSING }, { token: rita, expect: 404 });
  await call("GET /api/v1/runs/{id}/events", { id: run }, { token: rita, expect: 200 });
  await call("GET /api/v1/runs/{id}/events", { id: run }, { token: rita, accept: "text/event-stream", expect: 200 });
  await call("GET /api/v1/runs/{id}/events", { id: MISSING }, { token: rita, expect: 404 });
  await call("GET /api/v1/results", {}, { token: rita, expect: 200 });
  await call("GET /api/v1/agents", {}, { token: rita, expect: 200 });
  await call("GET /api/v1/agents", {}, { token: rita, query: { state: "nonsense" }, expect: 400 });
  await call("GET /metrics", {}, { token: rita, expect: 200 });
  await call("GET /api/v1/campaigns/{name}", { name: "livecamp" }, { token: rita, expect: 200 });
  await call("GET /api/v1/campaigns/{name}", { name: "no-such-campaign" }, { token: rita, expect: 404 });

  // The same job again, without force: the no-repeat map answers 200 with duplicate_of.
  await call("POST /api/v1/jobs", {}, { token: sam, body: { spec_yaml: JOB_SPEC("livecamp/base"), source_name: "job.yaml", bundle: BUNDLE }, expect: 200 });

  // Baselines.
  const bl = (await call("POST /api/v1/baselines", {}, { token: sam, body: { run_id: run, reason: "live" }, expect: 201 })).body;
  if (bl?.baseline?.set_by !== "sam" || bl?.baseline?.reason !== "live")
    fail(`a baseline set by sam should say set_by "sam", reason "live": ${JSON.stringify(bl)}`);
  await call("POST /api/v1/baselines", {}, { token: sam, body: {}, expect: 400 });
  await call("POST /api/v1/baselines", {}, { token: sam, body: { run_id: MISSING }, expect: 404 });
  await call("GET /api/v1/baselines", {}, { token: rita, query: { history: 1 }, expect: 200 });

  // A regression run of one job on L4.
  const reg = (await call("POST /api/v1/regressions", {}, { token: sam, body: {
    suite_yaml: "suite: live\njobs: [job.yaml]\non: {gpus: [L4]}\ncompare_to: baseline\n", source_name: "suite.yaml",
    jobs: [{ source_name: "job.yaml", spec_yaml: JOB_SPEC("livecamp/base"), bundle: BUNDLE }] }, expect: 201 })).body;
  await call("POST /api/v1/regressions", {}, { token: sam, body: { jobs: [] }, expect: 400 });
  await call("GET /api/v1/regressions", {}, { token: rita, expect: 200 });
  await call("GET /api/v1/regressions/{id}", { id: reg.regression.id }, { token: rita, expect: 200 });
  await call("GET /api/v1/regressions/{id}", { id: MISSING }, { token: rita, expect: 404 });

  // Cancel: a queued job, then again (already finished), then one that does not exist.
  const j2 = (await call("POST /api/v1/jobs", {}, { token: sam, body: { spec_yaml: JOB_SPEC("livecamp/two"), source_name: "job.yaml", bundle: BUNDLE, force: true }, expect: 201 })).body.job;
  const cancelled = (await call("POST /api/v1/jobs/{id}/cancel", { id: j2.id }, { token: sam, expect: 200 })).body;
  if (cancelled?.job?.cancelled_by !== "sam") fail(`a job cancelled by sam should say cancelled_by "sam": ${JSON.stringify(cancelled)}`);
  if (j2.cancelled_by !== "") fail(`a job nobody cancelled should say cancelled_by "": ${JSON.stringify(j2)}`);
  await call("POST /api/v1/jobs/{id}/cancel", { id: j2.id }, { token: sam, expect: 409 });
  await call("POST /api/v1/jobs/{id}/cancel", { id: MISSING }, { token: sam, expect: 404 });

  // Retire agent b; the audit log then holds token, baseline, cancel and retire events.
  await call("POST /api/v1/agents/{id}/retire", { id: b.agent_id }, { token: A, expect: 200 });
  await call("POST /api/v1/agents/{id}/retire", { id: MISSING }, { token: A, expect: 404 });
  await call("GET /api/v1/audit", {}, { token: A, expect: 200 });

  // Every route but health: no token (401), and a token of the wrong kind or scope (403).
  const ids = { id: job.id, hash: lease.bundle_hash, name: "livecamp" };
  const agentIds = { id: a.agent_id };
  const runIds = { id: run };
  for (const [key, op] of ops) {
    const access = op["x-kfleet-access"];
    if (access === "open") continue;
    const params = access === "agent" ? agentIds : access === "agent_run" ? runIds : ids;
    await call(key, params, { expect: 401 });
    // The event streams check the token too.
    if (op.responses["200"]?.content?.["text/event-stream"])
      await call(key, params, { accept: "text/event-stream", expect: 401 });
    let wrong;
    if (access === "agent" || access === "agent_run" || access === "enrol") wrong = sam;   // a user token
    else if (access === "submit") wrong = rita;                                           // too low a scope
    else if (access === "admin") wrong = sam;                                             // too low a scope
    else wrong = a.token;  // read, metrics, bundle: an agent token (a holds no lease now)
    await call(key, params, { token: wrong, expect: 403 });
  }
}

// A second kfleetd with tight limits: 429 on the submit routes (per token), 413 on a large
// body, and 429 on every route once an address has failed authentication too often.
async function limitsWalk() {
  const s = await startKfleetd("limits", ["--submit-rate-per-min", "1", "--auth-fail-rate-per-min", "1",
                                          "--max-body-bytes", "4096"]);
  const call = makeClient(s);
  const sam = (await call("POST /api/v1/tokens", {}, { token: s.admin, body: { user: "sam", scope: "submit" }, expect: 201 })).body.token.token;
  await call("POST /api/v1/jobs", {}, { token: sam, body: { spec_yaml: JOB_SPEC("limits/one"), source_name: "job.yaml", bundle: BUNDLE }, expect: 201 });
  for (const key of ["POST /api/v1/jobs", "POST /api/v1/jobs/{id}/cancel", "POST /api/v1/baselines", "POST /api/v1/regressions"])
    await call(key, { id: 1 }, { token: sam, expect: 429 });
  await call("POST /api/v1/jobs", {}, { token: sam, raw: JSON.stringify({ spec_yaml: "x".repeat(8192) }), expect: 413 });
  // One unknown token uses up the address's failed authentications; then everything is 429.
  await call("GET /api/v1/jobs", {}, { token: secret("kft_"), expect: 401 });
  for (const [key, op] of ops) {
    if (op["x-kfleet-access"] === "open") continue;
    await call(key, { id: 1, hash: "0".repeat(64), name: "x" }, { token: sam, expect: 429 });
  }
}

// A third kfleetd with a simulated cloud whose only region is out of L4s: the fleet view then
// carries a region block (and the job waits for capacity), which the other walks never show.
async function cloudWalk() {
  const { writeFileSync } = await import("node:fs");
  const cloud = join(tmp, "cloud.json");
  writeFileSync(cloud, JSON.stringify({ max_instances: 1, regions: [
    { name: "sim-1", gpu: "L4", arch: "sm_89", capacity: 1, script: ["stockout", "stockout", "stockout"] }] }));
  const s = await startKfleetd("cloud", ["--provisioner", "simulated", "--simulated-cloud", cloud,
                                         "--stockout-cooldown-ms", "600000"]);
  const call = makeClient(s);
  await call("POST /api/v1/jobs", {}, { token: s.admin, body: { spec_yaml: JOB_SPEC("cloud/one"), source_name: "job.yaml", bundle: BUNDLE }, expect: 201 });
  for (let i = 0; i < 100; i++) {
    const r = await call("GET /api/v1/agents", {}, { token: s.admin, expect: 200 });
    if (r.body?.blocks?.length) return;
    await new Promise((res) => setTimeout(res, 100));
  }
  fail("the simulated stockout never showed as a region block in GET /api/v1/agents");
}

let crashed = null;
try {
  await mainWalk();
  await limitsWalk();
  await cloudWalk();
} catch (e) {
  crashed = e;
  fail(`the walk stopped: ${e.stack || e}`);
} finally {
  for (const c of children) c.kill("SIGTERM");
}

// Every route, and every status it documents, must have had a live sample.
let checkedOps = 0, checkedStatuses = 0;
for (const [key, op] of ops) {
  const got = samples.get(key) || new Set();
  if (![...got].some((s) => /^2\d\d$/.test(s))) fail(`${key}: no live success response`);
  for (const [status, resp] of Object.entries(op.responses)) {
    if (!got.has(status)) { fail(`${key}: no live ${status} response (openapi.yaml documents it)`); continue; }
    for (const ctype of Object.keys(resp.content || {}))
      if (!got.has(`${status} ${ctype}`)) fail(`${key}: no live ${status} ${ctype} response`);
    ++checkedStatuses;
  }
  ++checkedOps;
}

if (failures.length === 0) {
  console.log(`openapi-live: ${checkedOps} operations, ${checkedStatuses} documented statuses, each answered live ` +
              `by kfleetd and matching its schema in ${specFile}`);
  rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
}
console.error(`openapi-live: ${failures.length} problem(s); kfleetd logs kept in ${tmp}`);
process.exit(1);
