// seed 001's loop through `kfleet mcp`, driven by the official MCP TypeScript SDK client
// (Client + StdioClientTransport) against a real kfleetd with simulated agents: list the tools,
// submit a child of the current best as parent + change, follow its progress notifications to
// the verdict, read the campaign and its no-repeat map, have a repeated change, a stale parent
// and one job too many refused, and see the change's diff in `kfleet status` and `kfleet report`.
//
// The dashboards' job page shows the same change, in a real headless chromium.
//
// Usage: node tests/mcp/mcp_sdk.test.mjs --kfleetd BIN --agent BIN --cli BIN
//          [--dashboards DIR] [--chromium BIN]
// Exit status 0 only when every check passed; a missing binary, chromium or node module fails.
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { check, killAll, readPort, runCommand, startChild, waitFor } from "../browser/harness.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

function options() {
  const o = { dashboards: join(repo, "dashboards"), chromium: process.env.CHROMIUM ?? "/usr/bin/chromium" };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const k = { "--kfleetd": "kfleetd", "--agent": "agent", "--cli": "cli", "--dashboards": "dashboards",
      "--chromium": "chromium" }[argv[i]];
    if (!k || argv[i + 1] === undefined) throw new Error(`unknown or incomplete option ${argv[i]}`);
    o[k] = argv[i + 1];
  }
  for (const k of ["kfleetd", "agent", "cli"])
    if (!o[k] || !existsSync(o[k])) throw new Error(`--${k} must name the built binary (got '${o[k] ?? ""}')`);
  if (!existsSync(join(o.dashboards, "dist", "index.html")))
    throw new Error(`no built dashboards in ${o.dashboards}/dist: build the dashboards target`);
  if (!existsSync(o.chromium)) throw new Error(`no chromium at ${o.chromium}: apt-get install chromium, or pass --chromium`);
  return o;
}

const KERNEL = `// stand-in source: the simulated backend never compiles it
#define TILE 64
__global__ void fa_s512() {
  float acc = 0.0f;  // O_accum
}
`;

// stage_ms 400: a job spends over 1.6 s in its stages, longer than kfleet_wait_verdict's longest
// gap between polls (1 s), so its progress notifications always catch it mid-way.
function rootYaml(gpu = "L4", timeUs = 656, name = "mcp/root", parent = "") {
  return `name: ${name}
campaign: mcp-campaign
${parent ? `parent: ${parent}\n` : ""}target: {gpu: ${gpu}}
kernel:
  family: attention
  language: cuda
  sources: [fa.cu]
  entry: fa_s512
  defines: {STAGES: 2}
  flags: [-O3]
gates:
  resources: {max_registers: 128, max_shared_bytes: 65536, max_spill_bytes: 0}
  correctness:
    dtype: fp16
    cases:
      - {name: small, shape: {B: 1, H: 2, S: 128, D: 64}, seeds: [0, 1]}
    tolerance: {atol: 1.0e-3, rtol: 1.0e-3}
  performance: {case: small, compare_to: ${parent ? "parent" : "baseline"}}
simulate: {time_us: ${timeUs}, noise_pct: 0.3, stage_ms: 400, eager_us: 700, compile_us: 600}
`;
}

async function main() {
  const o = options();
  const tmp = mkdtempSync(join(tmpdir(), "kfleet-mcp-test-"));
  const log = createWriteStream(join(tmp, "processes.log"));
  const ADMIN = "mcp-admin-token-5c1e9a07", ENROL = "mcp-enrol-token-2d7f";
  let client = null, browser = null, failed = false;
  try {
    const portFile = join(tmp, "port");
    // Two jobs in flight per token: the third is refused by kfleetd itself.
    const kfleetd = startChild("kfleetd", o.kfleetd, ["--listen", "127.0.0.1:0", "--port-file", portFile,
      "--db", join(tmp, "kfleet.db"), "--max-in-flight-per-token", "2", "--dashboards", o.dashboards], log,
      { ...process.env, KFLEET_ADMIN_TOKEN: ADMIN, KFLEET_ENROL_TOKEN: ENROL });
    const base = `http://127.0.0.1:${await readPort(portFile, kfleetd)}`;
    const cliEnv = { ...process.env, HOME: tmp, NO_COLOR: "1", KFLEET_TOKEN: ADMIN };
    for (const name of ["sim-l4-a", "sim-l4-b"]) {
      const wd = join(tmp, name);
      mkdirSync(wd);
      startChild(name, o.agent, ["--server", base, "--name", name, "--region", "us-east-1",
        "--backend", "simulated", "--gpu-class", "L4", "--arch", "sm_89", "--work-dir", wd], log,
        { ...process.env, KFLEET_ENROL_TOKEN: ENROL });
    }

    // The campaign's root, submitted as a person would.
    const jobs = join(tmp, "jobs");
    mkdirSync(jobs);
    writeFileSync(join(jobs, "fa.cu"), KERNEL);
    writeFileSync(join(jobs, "root.yaml"), rootYaml());
    const sub = runCommand(o.cli, ["submit", join(jobs, "root.yaml"), "--wait", "--server", base], cliEnv);
    check(sub.status === 0, `the root job passes (kfleet submit --wait exited ${sub.status}: ${sub.stderr}${sub.stdout})`);

    // The agent's side: the official SDK client speaking to `kfleet mcp` over stdio.
    const transport = new StdioClientTransport({ command: o.cli, args: ["--server", base, "mcp"],
      env: { PATH: process.env.PATH, HOME: tmp, KFLEET_TOKEN: ADMIN }, stderr: "pipe" });
    transport.stderr?.on("data", (d) => log.write(`[kfleet mcp] ${d}`));
    client = new Client({ name: "kfleet-mcp-test", version: "1.0.0" });
    await client.connect(transport);
    check(client.getServerVersion()?.name === "kfleet", "the server says it is kfleet");
    console.log(`ok: initialized (SDK speaks ${LATEST_PROTOCOL_VERSION})`);

    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    check(JSON.stringify(names) === JSON.stringify(["kfleet_get_campaign", "kfleet_get_fleet",
      "kfleet_get_problem", "kfleet_get_verdict", "kfleet_list_problems", "kfleet_submit_child",
      "kfleet_wait_verdict"]), `the seven tools (got ${names})`);
    for (const t of tools) {
      check(t.inputSchema?.type === "object", `${t.name} has an input schema`);
      check(t.outputSchema?.type === "object", `${t.name} has an output schema`);
    }
    console.log(`ok: tools/list: ${names.join(", ")}`);

    // The SDK validates structuredContent against each tool's outputSchema on every call.
    const call = async (name, args, extra = {}) => {
      const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...extra });
      return r;
    };
    // The problem library (no kfleetd asked): the list, and one problem's contract and starter.
    const problems = await call("kfleet_list_problems", {});
    check(!problems.isError && problems.structuredContent.problems.some((p) => p.name === "rmsnorm"),
      `the problem library lists rmsnorm (${problems.content?.[0]?.text?.slice(0, 200)})`);
    const rms = await call("kfleet_get_problem", { name: "rmsnorm" });
    check(!rms.isError && rms.structuredContent.ref === "rmsnorm@2" &&
      /kfleet_problem_launch/.test(rms.structuredContent.starter), "rmsnorm's contract and starter");
    console.log(`ok: problems: ${problems.structuredContent.problems.length} in the library; rmsnorm@2's contract`);
    const campaign0 = await call("kfleet_get_campaign", { name: "mcp-campaign" });
    check(!campaign0.isError, `read the campaign: ${campaign0.content?.[0]?.text}`);
    const root = campaign0.structuredContent.current_best;
    check(root?.name === "mcp/root", `the root is the current best (got ${JSON.stringify(root)})`);

    // 1. A child of the current best as parent + change, followed to its verdict.
    const change = {
      defines_set: { O_ACCUM_HALF: 1 },
      files: [{ path: "fa.cu", content: KERNEL.replace("float acc = 0.0f;", "half acc = __float2half(0.0f);") }],
    };
    const submitted = await call("kfleet_submit_child", { campaign: "mcp-campaign", change });
    check(!submitted.isError, `submit a child: ${submitted.content?.[0]?.text}`);
    const child = submitted.structuredContent;
    check(child.parent_job_id === root.job_id, "its parent is the current best");
    check(child.change_summary.includes("+O_ACCUM_HALF=1") && child.change_summary.includes("fa.cu +1 -1"),
      `kfleetd recorded the change (${child.change_summary})`);
    console.log(`ok: submitted job ${child.job_id}: ${child.change_summary}`);

    const progress = [];
    const waited = await call("kfleet_wait_verdict", { job_id: child.job_id, timeout_s: 120 },
      { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true });
    check(!waited.isError, `wait for the verdict: ${waited.content?.[0]?.text}`);
    const verdict = waited.structuredContent;
    check(verdict.finished && verdict.state === "passed", `the child passed (state ${verdict.state})`);
    // The SDK drops a progress notification that reaches it in the same read as the call's
    // result (it schedules the notification's handler after it has forgotten the token), so the
    // last one, "passed", may or may not be seen: the verdict above says passed; the
    // notifications must show the job on its way there, stage by stage.
    check(progress.length >= 2, `progress notifications arrived (${progress.length})`);
    for (let i = 1; i < progress.length; i++) check(progress[i].progress > progress[i - 1].progress, "progress only grows");
    const said = progress.map((p) => p.message).join(" | ");
    check(progress.every((p) => /^job \d+: (queued|waiting_capacity|leased|building|gating|benchmarking|passed)\b/.test(p.message)),
      `each notification names the job's state: ${said}`);
    check(/building|gating|benchmarking/.test(said), `progress names the stages: ${said}`);
    check(verdict.gates.correctness?.cases?.length === 2 && verdict.gates.correctness.ok === true,
      "correctness per case and seed");
    check(typeof verdict.gates.benchmark?.median_us === "number" && verdict.gates.benchmark.noise_pct !== undefined,
      "the benchmark's median and noise");
    check(verdict.gates.resources?.kernels?.length > 0, "resources per kernel");
    check(verdict.marks.simulated === true && verdict.marks.self_reported === false, "marked simulated, not self-reported");
    check(verdict.change?.files?.[0]?.diff.includes("+  half acc"), "the verdict carries the diff");
    // A problem's kernel (the attention family) against kfleet's PyTorch references (simulated:
    // eager 700 µs, torch.compile 600 µs against the kernel's 656 µs), in the verdict and its
    // benchmark gate, each with its interval and the key its timing is cached by.
    const versus = verdict.verdict?.versus ?? [];
    const eager = versus.find((c) => c.baseline === "eager"), compile = versus.find((c) => c.baseline === "compile");
    check(eager && compile && eager.speedup > 1.03 && eager.speedup < 1.1 && compile.speedup > 0.88 && compile.speedup < 0.95,
      `speedups over eager and torch.compile (got ${JSON.stringify(versus)})`);
    check(eager.ci_low <= eager.speedup && eager.ci_high >= eager.speedup && eager.simulated === true &&
      eager.key?.problem === "attention" && eager.key?.case === "small" && eager.key?.gpu_class === "L4",
      `the comparison's interval, simulated mark and cache key (got ${JSON.stringify(eager)})`);
    check(JSON.stringify(verdict.gates.benchmark.versus) === JSON.stringify(versus), "the benchmark gate carries the comparisons");
    check(/\n1\.0\dx eager \[[\d.]+, [\d.]+\], 0\.9\dx torch\.compile \[[\d.]+, [\d.]+\] \(small, simulated\)$/.test(verdict.verdict.reason),
      `the reason ends with the comparison line (got '${verdict.verdict.reason}')`);
    console.log(`ok: verdict after ${progress.length} progress notifications: ${verdict.verdict?.reason}`);

    // 2. The campaign: the same-speed child is a rejection, and it is in the no-repeat map.
    const campaign1 = (await call("kfleet_get_campaign", { name: "mcp-campaign" })).structuredContent;
    const tried = campaign1.no_repeat.find((e) => e.job_id === child.job_id);
    check(tried && tried.change_summary === child.change_summary, "the no-repeat map lists the change");
    check(campaign1.rejections.some((e) => e.job_id === child.job_id && /not an improvement/.test(e.reason)),
      "a child that is not faster is a rejection with its reason");
    check(campaign1.log_markdown.includes("## No-Repeat Map") && campaign1.log_markdown.includes("+O_ACCUM_HALF=1"),
      "the log reads like seed 002's");
    // fast_p over the campaign's judged kernels (the root and the child, both 1.07x eager).
    check(campaign1.fast_p?.kernels === 2 && campaign1.fast_p.baselines[0].p[0].fast === 2 &&
      campaign1.fast_p.baselines[1].p[0].fast === 0, `the campaign's fast_p (got ${JSON.stringify(campaign1.fast_p)})`);
    check(campaign1.log_markdown.includes("## Against PyTorch (fast_p)") && campaign1.log_markdown.includes("fast_1.5"),
      "the log carries fast_p");
    console.log("ok: campaign: no-repeat map and rejection");

    // 3. The same change again is refused, saying what to do instead.
    const again = await call("kfleet_submit_child", { campaign: "mcp-campaign", change });
    check(again.isError && /already_tried/.test(again.content[0].text) && /force/.test(again.content[0].text),
      `a repeated change is refused (${again.content[0].text})`);
    console.log(`ok: refused: ${again.content[0].text.split("\n")[0]}`);

    // 4. A faster whole job becomes the current best; then building on the old root is refused.
    const faster = await call("kfleet_submit_child", { campaign: "mcp-campaign", job: {
      yaml: rootYaml("L4", 560, "mcp/faster", "mcp/root"), files: [{ path: "fa.cu", content: KERNEL }] } });
    check(!faster.isError, `submit a whole job: ${faster.content?.[0]?.text}`);
    const fasterDone = (await call("kfleet_wait_verdict", { job_id: faster.structuredContent.job_id })).structuredContent;
    check(fasterDone.verdict?.perf === "improved", `the faster child improved (${fasterDone.verdict?.reason})`);
    const stale = await call("kfleet_submit_child", { campaign: "mcp-campaign", parent_job: root.job_id,
      change: { flags_added: ["-lineinfo"] } });
    check(stale.isError && /not_current_best/.test(stale.content[0].text) &&
      stale.content[0].text.includes(`job ${faster.structuredContent.job_id}`),
      `a child of a stale parent is refused, naming the current best (${stale.content[0].text})`);
    console.log("ok: kept win; stale parent refused");

    // 5. The token's in-flight limit (2): two jobs no agent serves stay queued; the third is refused.
    const best = faster.structuredContent.job_id;
    const h100 = (n) => call("kfleet_submit_child", { campaign: "mcp-campaign", job: {
      yaml: rootYaml("H100", 500 + n, `mcp/h100-${n}`, "mcp/faster"), files: [{ path: "fa.cu", content: KERNEL }] } });
    const q1 = await h100(1), q2 = await h100(2), q3 = await h100(3);
    check(!q1.isError && !q2.isError, `two jobs in flight are accepted (${q1.content[0].text} ${q2.content[0].text})`);
    check(q3.isError && /in_flight_limit/.test(q3.content[0].text) && /wait for a verdict/.test(q3.content[0].text),
      `the third is refused (${q3.content[0].text})`);
    const fleet = (await call("kfleet_get_fleet", {})).structuredContent;
    check(fleet.queue.queued + fleet.queue.waiting_capacity >= 2 && fleet.queue.by_gpu.H100 === 2,
      `the fleet shows the H100 jobs waiting (${fleet.summary})`);
    check(fleet.gpu_classes.some((g) => g.gpu_class === "L4" && g.agents === 2 && g.simulated), "two simulated L4 agents");
    for (const q of [q1, q2]) runCommand(o.cli, ["cancel", String(q.structuredContent.job_id), "--server", base], cliEnv);
    console.log(`ok: in-flight limit; fleet: ${fleet.summary}`);
    check(best > 0, "the faster job is known");

    // 6. One change at a time shows in the CLI: `kfleet status JOB` and `kfleet report RUN`.
    const status = runCommand(o.cli, ["status", String(child.job_id), "--server", base], cliEnv);
    check(status.status === 0 && status.stdout.includes("change    kernel.defines +O_ACCUM_HALF=1") &&
      status.stdout.includes("+  half acc = __float2half(0.0f);") && status.stdout.includes("-  float acc = 0.0f;"),
      `kfleet status shows the diff:\n${status.stdout}${status.stderr}`);
    const runId = verdict.run_ids[verdict.run_ids.length - 1];
    const report = runCommand(o.cli, ["report", String(runId), "--server", base], cliEnv);
    check(report.status === 0 && report.stdout.includes("## Change against the parent") &&
      report.stdout.includes("```diff") && report.stdout.includes("+ define O_ACCUM_HALF=1"),
      `kfleet report shows the diff:\n${report.stdout}${report.stderr}`);
    console.log("ok: kfleet status and kfleet report show the change");

    // 7. The dashboards' job page, signed in as a person would.
    const req = createRequire(join(repo, "dashboards", "package.json"));  // its node_modules
    let chromium;
    try { ({ chromium } = req("playwright-core")); } catch {
      throw new Error("playwright-core is not installed: run 'npm install' in dashboards/");
    }
    browser = await chromium.launch({ executablePath: o.chromium, headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${base}/#/jobs/${child.job_id}`);
    await page.waitForSelector("#login", { timeout: 15000 });
    await page.fill("#login-token", ADMIN);
    await page.click("#login button");
    await page.waitForSelector("body[data-user]", { timeout: 15000 });
    await page.goto(`${base}/#/jobs/${child.job_id}`);
    await page.waitForSelector("#change pre.diff", { timeout: 15000 });
    const card = await page.textContent("#change");
    check(card.includes(child.change_summary) && card.includes("+ define O_ACCUM_HALF=1") &&
      card.includes("+  half acc = __float2half(0.0f);") && card.includes(`#${root.job_id}`),
      `the job page shows the change against its parent: ${card}`);
    await page.screenshot({ path: join(tmp, "job-change.png") });
    console.log("ok: the dashboards' job page shows the change");
  } catch (e) {
    failed = true;
    console.error(`FAIL: ${e.stack || e.message}`);
    await new Promise((r) => log.end(r));
    try { console.error(readFileSync(join(tmp, "processes.log"), "utf8").split("\n").slice(-60).join("\n")); } catch { /* none */ }
  } finally {
    if (client) await client.close().catch(() => {});
    if (browser) await browser.close().catch(() => {});
    await killAll();
    if (!failed) rmSync(tmp, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

main();
