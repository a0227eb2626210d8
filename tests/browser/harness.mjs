// Process plumbing for the browser test: start kfleetd, agents and the CLI, wait on conditions
// with deadlines, and make sure every child dies when the test ends, passed or not.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const children = new Set();

/** Polls `probe` until it returns a truthy value or `ms` pass; throws naming `what`. */
export async function waitFor(what, probe, ms = 20000, everyMs = 100) {
  const deadline = Date.now() + ms;
  let lastErr;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (err) { lastErr = err; }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}${lastErr ? ` (last error: ${lastErr.message})` : ""}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Starts a long-lived child whose output goes to `logFile`'s stream; it is killed by killAll(). */
export function startChild(name, cmd, args, logStream, env = process.env) {
  const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.on("data", (d) => logStream.write(`[${name}] ${d}`));
  child.stderr.on("data", (d) => logStream.write(`[${name}] ${d}`));
  child.exited = new Promise((resolve) => child.on("exit", (code, sig) => resolve({ code, sig })));
  child.on("error", (err) => logStream.write(`[${name}] failed to start: ${err.message}\n`));
  child.label = name;
  children.add(child);
  child.exited.then(() => children.delete(child));
  return child;
}

/** Ends every child this test started: SIGTERM, then SIGKILL for any still alive after 5 s. */
export async function killAll() {
  const live = [...children];
  for (const c of live) { try { c.kill("SIGTERM"); } catch { /* already gone */ } }
  await Promise.race([Promise.all(live.map((c) => c.exited)), new Promise((r) => setTimeout(r, 5000))]);
  for (const c of children) { try { c.kill("SIGKILL"); } catch { /* already gone */ } }
}

/** Runs a short command to completion; returns {status, stdout, stderr}. */
export function runCommand(cmd, args, env = process.env) {
  const r = spawnSync(cmd, args, { env, encoding: "utf8", timeout: 60000 });
  if (r.error) throw new Error(`${cmd} ${args.join(" ")}: ${r.error.message}`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Reads a port kfleetd wrote to `file` once it listens. */
export async function readPort(file, child) {
  return waitFor("kfleetd to write its port file", () => {
    if (child.exitCode !== null) throw new Error(`kfleetd exited with ${child.exitCode}`);
    if (!existsSync(file)) return 0;
    const p = Number(readFileSync(file, "utf8").trim());
    return p > 0 ? p : 0;
  }, 20000);
}

let apiToken = "";
/** The token api() sends (kfleetd needs one for every read). */
export function setApiToken(t) { apiToken = t; }

/** GETs JSON from kfleetd. */
export async function api(base, path) {
  const headers = { Accept: "application/json" };
  if (apiToken) headers.Authorization = `Bearer ${apiToken}`;
  const res = await fetch(base + path, { headers });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}

export function check(cond, message) {
  if (!cond) throw new Error(`check failed: ${message}`);
}

// The command line's --option VALUE pairs over the defaults in `o`: `keys` maps each option to
// its field. A chromium that is not there is an error, as an unknown or incomplete option is.
export function parseOptions(o, keys, argv = process.argv.slice(2)) {
  for (let i = 0; i < argv.length; i += 2) {
    const k = keys[argv[i]];
    if (!k || argv[i + 1] === undefined) throw new Error(`unknown or incomplete option ${argv[i]}`);
    o[k] = argv[i + 1];
  }
  if (o.chromium !== undefined && !existsSync(o.chromium))
    throw new Error(`no chromium at ${o.chromium}: apt-get install chromium, or pass --chromium`);
  return o;
}

// playwright-core, from the dashboards' node_modules (scripts/install-deps.sh installs it).
export function loadPlaywright(repo) {
  const req = createRequire(join(repo, "dashboards", "package.json"));
  try { return req("playwright-core"); } catch {
    throw new Error("playwright-core is not installed: run 'npm install' in dashboards/");
  }
}

// A headless chromium with its profile in `profileDir`: its context, its first page, and the
// page's uncaught errors as they come.
export async function openBrowser(chromium, executablePath, profileDir) {
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath, headless: true, viewport: { width: 1280, height: 800 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = context.pages()[0] ?? await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  return { context, page, pageErrors };
}
