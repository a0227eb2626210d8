// The dashboards in a real browser against a real kfleetd with two simulated agents: every page
// shows the right data, and the queue page follows a job from queued to passed without reload.
//
// Usage: node tests/browser/dashboards.test.mjs --kfleetd BIN --agent BIN --cli BIN
//          [--dist build/dashboards/dist] [--screenshots DIR] [--docs-screenshots DIR] [--chromium BIN]
// Exit status 0 only when every check passed; a missing chromium, node module or binary fails.
import { copyFileSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { api, check, killAll, loadPlaywright, openBrowser, parseOptions, readPort, runCommand, setApiToken, startChild, waitFor } from "./harness.mjs";
import { checkBlockCountdown } from "./stubbed_pages.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");

function options() {
  const o = {
    kfleetd: process.env.KFLEETD, agent: process.env.KFLEET_AGENT, cli: process.env.KFLEET_CLI,
    dist: process.env.KFLEET_DASHBOARDS ?? join(repo, "build", "dashboards", "dist"),
    screenshots: process.env.KFLEET_SCREENSHOTS ?? join(repo, "build", "browser-screenshots"),
    docsScreenshots: process.env.KFLEET_DOCS_SCREENSHOTS ?? "",
    chromium: process.env.CHROMIUM ?? "/usr/bin/chromium",
  };
  parseOptions(o, { "--kfleetd": "kfleetd", "--agent": "agent", "--cli": "cli", "--dist": "dist",
    "--screenshots": "screenshots", "--docs-screenshots": "docsScreenshots", "--chromium": "chromium" });
  for (const k of ["kfleetd", "agent", "cli"]) {
    if (!o[k] || !existsSync(o[k])) throw new Error(`--${k === "agent" ? "agent" : k} must name the built binary (got '${o[k] ?? ""}')`);
  }
  if (!existsSync(join(o.dist, "index.html"))) throw new Error(`${o.dist}/index.html is missing: build them: cmake --build build --target dashboards`);
  return o;
}

const KERNEL = "// stand-in source: the simulated backend never compiles it\n__global__ void fp8_sdpa() {}\n";

function jobYaml(name, parent, timeUs) {
  return `name: ${name}
campaign: browser-campaign
${parent ? `parent: ${parent}\n` : ""}target: {gpu: L4}
kernel:
  family: attention
  language: cuda
  sources: [kernel.cu]
  entry: fp8_sdpa
gates:
  resources: {max_registers: 128, max_shared_bytes: 65536, max_spill_bytes: 0}
  correctness:
    dtype: {q: fp16, kv: fp8_e4m3, out: fp16}
    cases:
      - {name: small,   shape: {B: 1, H: 4, S: 256,  D: 64}, seeds: [0, 1, 2]}
      - {name: mission, shape: {B: 4, H: 16, S: 2048, D: 64}, seeds: [0, 1, 2]}
    tolerance: {max_abs: 0.06}
  performance: {case: mission, compare_to: ${parent ? "parent" : "baseline"}}
simulate: {time_us: ${timeUs}, noise_pct: 0.3, stage_ms: 300, eager_us: 800, compile_us: 680}
`;
}

/** Counts painted pixels of a canvas, so "drawn" means chart.js really drew on it. */
async function paintedPixels(page, selector) {
  return page.$eval(selector, (c) => {
    const ctx = c.getContext("2d");
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
    return n;
  });
}

async function main() {
  const o = options();
  const { chromium } = loadPlaywright(repo);
  const tmp = mkdtempSync(join(tmpdir(), "kfleet-browser-"));
  mkdirSync(o.screenshots, { recursive: true });
  if (o.docsScreenshots) mkdirSync(o.docsScreenshots, { recursive: true });
  const log = createWriteStream(join(o.screenshots, "processes.log"));
  // Tokens go through the environment and 0600 files, never argv. The admin token makes a
  // read token for the browser, which signs in with it like a person would.
  const ADMIN = "browser-admin-token-3b9f07c2d4e1", ENROL = "browser-enrol-token-61a8";
  let context = null;
  let failed = false;
  // Pages drawn from stubbed answers stay out of the docs: those show only real runs.
  const shot = async (page, name, { docs = true } = {}) => {
    const file = join(o.screenshots, `${name}.png`);
    await page.screenshot({ path: file });
    if (o.docsScreenshots && docs) copyFileSync(file, join(o.docsScreenshots, `${name}.png`));
    console.log(`  screenshot ${file}`);
  };
  try {
    const portFile = join(tmp, "port");
    const kfleetd = startChild("kfleetd", o.kfleetd, ["--listen", "127.0.0.1:0", "--port-file", portFile,
      "--db", join(tmp, "kfleet.db"),
      // The build's dashboards folder, whose built pages are in dist/.
      "--dashboards", dirname(o.dist)], log,
      { ...process.env, KFLEET_ADMIN_TOKEN: ADMIN, KFLEET_ENROL_TOKEN: ENROL });
    const base = `http://127.0.0.1:${await readPort(portFile, kfleetd)}`;
    console.log(`kfleetd at ${base}`);
    setApiToken(ADMIN);
    const cliEnv = { ...process.env, HOME: tmp, NO_COLOR: "1", KFLEET_TOKEN: ADMIN };
    const readTokenFile = join(tmp, "viewer.token");
    const made = runCommand(o.cli, ["token", "create", "--user", "viewer", "--scope", "read", "--out",
      readTokenFile, "--server", base], cliEnv);
    check(made.status === 0, `kfleet token create exited ${made.status}: ${made.stderr}${made.stdout}`);
    const VIEWER = readFileSync(readTokenFile, "utf8").trim();

    const browser = await openBrowser(chromium, o.chromium, join(tmp, "chromium-profile"));
    context = browser.context;
    const { page, pageErrors } = browser;

    // 0. Every page needs a token: the page asks for one; a wrong one is refused.
    await page.goto(`${base}/#/`);
    await page.waitForSelector("#login", { timeout: 15000 });
    check(!(await page.isVisible("#queue, #waiting")), "nothing is shown before signing in");
    await page.fill("#login-token", "kft_not-a-token");
    await page.click("#login button");
    await waitFor("the refusal", async () => (await page.textContent("#login-error")).includes("refused") || null, 15000);
    await page.fill("#login-token", VIEWER);
    await page.click("#login button");
    await page.waitForSelector("body[data-user=viewer]", { timeout: 15000 });
    check((await page.textContent("#who")).includes("viewer (read)"), "the header names the signed-in user");
    console.log("ok: signed in with a read token");

    // 1. Queue page, open before anything exists, then followed live.
    await page.goto(`${base}/#/`);
    await page.waitForSelector("#feed-status[data-state=live]", { timeout: 15000 });
    await page.evaluate(() => { window.__sameDocument = "yes"; });

    const jobs = join(tmp, "jobs");
    mkdirSync(jobs);
    writeFileSync(join(jobs, "kernel.cu"), KERNEL);
    writeFileSync(join(jobs, "parent.yaml"), jobYaml("browser/parent", "", 656));
    writeFileSync(join(jobs, "child.yaml"), jobYaml("browser/child", "browser/parent", 696));
    const submit = (file) => {
      const r = runCommand(o.cli, ["submit", join(jobs, file), "--server", base], cliEnv);
      check(r.status === 0, `kfleet submit ${file} exited ${r.status}: ${r.stderr}${r.stdout}`);
    };
    submit("parent.yaml");
    await page.waitForSelector("#waiting tr:has-text('browser/parent')", { timeout: 15000 });
    check((await page.textContent("#waiting tr:has-text('browser/parent')")).includes("queued") ||
          (await page.textContent("#waiting tr:has-text('browser/parent')")).includes("waiting_capacity"),
          "the job waits while no agent serves L4");
    await shot(page, "queue-waiting");

    // Record every stage the running table shows, to prove it followed the run as it went.
    await page.evaluate(() => {
      window.__stagesSeen = [];
      new MutationObserver(() => {
        for (const el of document.querySelectorAll("#running .stage")) {
          const s = el.getAttribute("data-stage");
          if (s && !window.__stagesSeen.includes(s)) window.__stagesSeen.push(s);
        }
      }).observe(document.getElementById("app"), { childList: true, subtree: true });
    });
    // Only now do agents exist, so the open page must see the job leave the queue and pass.
    for (const [name, region] of [["agent-use1", "us-east-1"], ["agent-euw1", "eu-west-1"]]) {
      const wd = join(tmp, name);
      mkdirSync(wd);
      startChild(name, o.agent, ["--server", base, "--name", name, "--region", region,
        "--backend", "simulated", "--gpu-class", "L4", "--arch", "sm_89", "--work-dir", wd], log,
        { ...process.env, KFLEET_ENROL_TOKEN: ENROL });
    }
    await page.waitForSelector("#verdicts tr:has-text('browser/parent') [data-state=passed]", { timeout: 60000 });
    check(await page.evaluate(() => window.__sameDocument) === "yes", "queue page updated without a reload");
    check(!(await page.isVisible("#waiting tr:has-text('browser/parent')")), "passed job left the waiting table");
    const stages = await page.evaluate(() => window.__stagesSeen);
    check(stages.length > 0, "the running table showed the job's current stage while it ran");
    console.log(`ok: live update queued -> passed without reload (stages seen: ${stages.join(", ")})`);

    submit("child.yaml");
    const child = await waitFor("child job to finish", async () => {
      const { jobs: list } = await api(base, "/api/v1/jobs?campaign=browser-campaign");
      const c = list.find((j) => j.name === "browser/child");
      return c && ["passed", "rejected", "error"].includes(c.state) ? c : null;
    }, 60000, 200);
    check(child.state === "rejected", `696 µs against 656 µs is rejected (got ${child.state})`);
    // A problem's kernel (the attention family): its reason ends with a line comparing it with
    // kfleet's PyTorch references (simulated: eager 800 µs, torch.compile 680 µs).
    const [reason, versusLine] = (child.verdict?.reason ?? "").split("\n");
    check(/do not merge: \+[56]\.\d%/.test(reason), `rejection reason names the ~+6% regression (got '${reason}')`);
    check(/^1\.1\dx eager \[\d\.\d\d, \d\.\d\d\], 0\.9\dx torch\.compile \[\d\.\d\d, \d\.\d\d\] \(mission, simulated\)$/.test(versusLine ?? ""),
      `the reason's last line compares the kernel with PyTorch (got '${versusLine}')`);
    check((child.verdict?.versus ?? []).every((c) => c.simulated && c.key?.problem === "attention" && c.key?.case === "mission"),
      "the comparisons are simulated and carry their cache key");
    await page.waitForSelector(`#verdicts tr:has-text('browser/child') .reason:has-text("${reason}")`, { timeout: 15000 });
    check(await page.isVisible("#verdicts tr:has-text('browser/child') .badge.sim"), "verdict has a SIMULATED badge");
    const vsCell = await page.textContent("#verdicts tr:has-text('browser/child') .versus[data-baseline=eager]");
    check(/^1\.1\dx eager \[\d\.\d\d, \d\.\d\d\]$/.test(vsCell.trim()),
      `the verdicts table has a vs PyTorch column, each speedup with its interval (got '${vsCell}')`);
    await shot(page, "queue");

    // 2. Fleet: both agents under their regions, L4, simulated.
    await page.goto(`${base}/#/fleet`);
    for (const [name, region] of [["agent-use1", "us-east-1"], ["agent-euw1", "eu-west-1"]]) {
      const row = `[data-region="${region}"] tr:has-text("${name}")`;
      await page.waitForSelector(row, { timeout: 15000 });
      const text = await page.textContent(`[data-region="${region}"]`);
      check(text.includes("L4"), `region ${region} groups its agent under L4`);
      check(await page.isVisible(`${row} .badge.sim`), `agent ${name} is marked SIMULATED`);
      check(/idle|busy/.test(await page.textContent(`${row} [data-state]`)), `agent ${name} is idle or busy`);
    }
    await page.waitForSelector("#blocks");
    await shot(page, "fleet");

    // 3. The rejected child's job page: gates, verdict, timing chart, event log.
    await page.goto(`${base}/#/jobs/${child.id}`);
    await page.waitForSelector("#timing-chart[data-drawn='1']", { timeout: 15000 });
    check((await page.textContent("#job-name")) === "browser/child", "job page names the job");
    check(!!child.submitted_by && (await page.textContent("#submitted-by")) === `by ${child.submitted_by}`,
      `job page names who submitted it (${child.submitted_by})`);
    check(!(await page.isVisible("#cancelled-by")), "a job nobody cancelled names no canceller");
    check((await page.textContent("#verdict")).includes(reason), "verdict line shows the reason");
    check((await page.textContent("#verdict-versus")).trim() === versusLine, "verdict line shows its comparison with PyTorch");
    const versusCard = (await page.textContent("#versus")).replace(/\s+/g, " ");
    check(versusCard.includes("torch.compile") && /1\.1\dx/.test(versusCard) && versusCard.includes("cached by: attention case mission on L4"),
      `the job page shows each comparison and its cache key (got '${versusCard}')`);
    check(await page.isVisible("#verdict .badge.sim"), "verdict line is marked SIMULATED");
    check((await page.textContent("#resources")).includes("fp8_sdpa"), "resources table lists the kernel");
    const corrRows = await page.$$eval("#correctness tbody tr", (rows) => rows.map((r) => r.textContent));
    check(corrRows.length === 6, `correctness table has 6 case×seed rows (got ${corrRows.length})`);
    check(corrRows.some((r) => r.includes("mission") && r.includes("PASS")), "correctness rows show cases and PASS");
    check((await paintedPixels(page, "#timing-chart")) > 500, "timing chart is drawn");
    check((await page.textContent("#event-log")).includes("bench.result"), "event log lists bench.result");
    await shot(page, "job");

    // A torch program's page lists the kernels its launch ran, each with its origin (a simulated
    // agent records nothing, and its report says so).
    writeFileSync(join(jobs, "attn_torch.py"),
      "import torch.nn.functional as F\n\ndef kfleet_attention_launch_sdpa(args, stream):\n" +
      "    args.o.copy_(F.scaled_dot_product_attention(args.q, args.k, args.v))\n");
    writeFileSync(join(jobs, "torch.yaml"), `name: browser/torch-sdpa
target: {gpu: L4}
kernel: {family: attention, language: torch, sources: [attn_torch.py], entry: kfleet_attention_launch_sdpa}
gates:
  correctness:
    dtype: fp16
    cases: [{name: small, shape: {B: 1, H: 2, S: 128, D: 64}, seeds: [0]}]
    tolerance: {atol: 1.0e-3, rtol: 1.0e-3}
  performance: {case: small}
simulate: {time_us: 90, noise_pct: 0.3, stage_ms: 50}
`);
    submit("torch.yaml");
    const torchJob = await waitFor("the torch job to finish", async () => {
      const j = (await api(base, "/api/v1/jobs")).jobs.find((x) => x.name === "browser/torch-sdpa");
      return j && ["passed", "rejected", "error"].includes(j.state) ? j : null;
    }, 60000, 200);
    await page.goto(`${base}/#/jobs/${torchJob.id}`);
    await page.waitForSelector("#kernels", { timeout: 15000 });
    const kernelsText = (await page.textContent("#kernels")).replace(/\s+/g, " ");
    check(kernelsText.includes("kfleet_attention_launch_sdpa") && kernelsText.includes("simulated: nothing was recorded"),
      `the torch job's page lists its kernel and where it came from (got '${kernelsText}')`);
    check(await page.isVisible("#kernels [data-origin=job]"), "the kernel's origin is marked (job)");
    check(await page.isVisible("#kernels .badge.sim"), "the kernels' report is marked SIMULATED");
    await page.goto(`${base}/#/jobs/${child.id}`);
    await page.waitForSelector("#job-name");
    check(!(await page.isVisible("#kernels")), "a CUDA job's page has no recorder's kernel list");

    // A cancelled job's page names who cancelled it.
    writeFileSync(join(jobs, "cancel-me.yaml"), jobYaml("browser/cancel-me", "", 656).replace("{gpu: L4}", "{gpu: T4}"));
    submit("cancel-me.yaml");
    const doomed = (await api(base, "/api/v1/jobs")).jobs.find((j) => j.name === "browser/cancel-me");
    check(!!doomed, "the job to cancel was submitted");
    const cancelled = runCommand(o.cli, ["cancel", String(doomed.id), "--server", base], cliEnv);
    check(cancelled.status === 0, `kfleet cancel exited ${cancelled.status}: ${cancelled.stderr}${cancelled.stdout}`);
    const after = await waitFor("the job to be cancelled", async () => {
      const { job: j } = await api(base, `/api/v1/jobs/${doomed.id}`);
      return j.state === "cancelled" ? j : null;
    }, 15000, 200);
    await page.goto(`${base}/#/jobs/${doomed.id}`);
    await page.waitForSelector("#cancelled-by", { timeout: 15000 });
    check(!!after.cancelled_by && (await page.textContent("#cancelled-by")) === `cancelled by ${after.cancelled_by}`,
      `a cancelled job's page names who cancelled it (${after.cancelled_by})`);

    // 4. Campaign: lineage chart with kept and rejected markers and the reason.
    await page.goto(`${base}/#/campaigns/browser-campaign`);
    await page.waitForSelector("#campaign-chart[data-drawn='1']", { timeout: 15000 });
    check((await paintedPixels(page, "#campaign-chart")) > 500, "campaign chart is drawn");
    const lineage = await page.textContent("#lineage");
    check(lineage.includes("browser/parent") && lineage.includes("browser/child"), "lineage lists both jobs");
    check(await page.isVisible("#lineage .mark-kept") && await page.isVisible("#lineage .mark-rejected"),
      "lineage marks the parent kept and the child rejected");
    check(lineage.includes(reason), "lineage shows the rejection reason");
    check(await page.isVisible("#lineage .badge.sim"), "campaign jobs are marked SIMULATED");
    check(await page.isVisible("#lineage .versus[data-baseline=compile]"), "lineage has a vs PyTorch column");
    await page.waitForSelector("#versus-chart[data-drawn='1']", { timeout: 15000 });
    check((await paintedPixels(page, "#versus-chart")) > 500, "the speedup chart along the lineage is drawn");
    // fast_p over the campaign's two judged kernels (the cancelled one is not judged): both
    // faster than eager (1.22x, 1.15x), one than torch.compile (1.04x; the child 0.98x).
    await page.waitForSelector("#fast-p", { timeout: 15000 });
    const fp = async (b, p) => (await page.textContent(`#fast-p [data-baseline=${b}][data-p='${p}']`)).trim();
    check(await fp("eager", "1") === "2/2" && await fp("compile", "1") === "1/2" && await fp("eager", "1.5") === "0/2",
      `fast_p of the campaign (got eager ${await fp("eager", "1")}, compile ${await fp("compile", "1")}, eager@1.5 ${await fp("eager", "1.5")})`);
    check((await page.textContent("#fast-p")).includes("Denominator: 2 finished jobs"), "fast_p says what its denominator is");
    await shot(page, "campaign");

    // A freshly opened page starts its feed near the newest event, not at the first.
    const all = (await api(base, "/api/v1/events?after=0&limit=10000")).events;
    const lastId = all[all.length - 1].id;
    await page.goto(`${base}/#/`);
    await page.reload();
    await page.waitForSelector("#feed-status[data-state=live]", { timeout: 15000 });
    const firstCell = await waitFor("the live events panel to fill", async () =>
      page.$eval("#events tbody tr td", (td) => td.textContent).catch(() => null), 15000);
    check(Number(firstCell) === lastId, `newest event #${lastId} heads the live events panel (got #${firstCell})`);
    const from = Number(await page.getAttribute("body", "data-feed-from"));
    check(lastId > 30 && from > 0 && lastId - from <= 30, `the feed began at #${from}, near the newest #${lastId}`);

    // 5. Regressions: none yet; then two real runs of a suite over the simulated L4 agents. The
    // first fills the baselines; in the second one kernel is scripted 6% slower on L4.
    await page.goto(`${base}/#/regressions`);
    await waitFor("the empty regressions page", async () =>
      (await page.textContent("#app")).includes("No regression runs yet") || null, 15000);
    const reg = join(tmp, "suite");
    mkdirSync(reg);
    writeFileSync(join(reg, "kernel.cu"), KERNEL);
    const suiteJob = (name, sim) => `name: ${name}\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, ` +
      `sources: [kernel.cu], entry: fp8_sdpa}\ngates:\n  correctness:\n    dtype: fp16\n    cases:\n` +
      `      - {name: small, shape: {B: 1, H: 2, S: 128, D: 64}, seeds: [0]}\n    tolerance: {max_abs: 0.06}\n` +
      `  performance: {case: small, compare_to: baseline, threshold_pct: 1.0}\nsimulate: ${sim}\n`;
    writeFileSync(join(reg, "attn.yaml"), suiteJob("suite/attn", "{time_us: 80, noise_pct: 0.2, stage_ms: 50}"));
    writeFileSync(join(reg, "suite.yaml"), "suite: browser-nightly\njobs: [attn.yaml, gemm.yaml]\n" +
      "on: {gpus: [L4], regions: any}\ncompare_to: baseline\n");
    const regress = (sim, expectStatus) => {
      writeFileSync(join(reg, "gemm.yaml"), suiteJob("suite/gemm", sim));
      const out = join(reg, "run.json");
      const r = runCommand(o.cli, ["regress", join(reg, "suite.yaml"), "--server", base,
        "--json", out, "--timeout-s", "50"], cliEnv);
      check(r.status === expectStatus, `kfleet regress exited ${r.status}, expected ${expectStatus}: ${r.stdout}${r.stderr}`);
      const run = JSON.parse(readFileSync(out, "utf8")).regression;
      check(run.fast_p?.kernels === 2 && run.fast_p.baselines.length === 2,
        `the regression run's JSON carries fast_p over its 2 cells (got ${JSON.stringify(run.fast_p)})`);
      check(r.stdout.includes("fast_1.5") && r.stdout.includes("against PyTorch"), `kfleet regress prints fast_p: ${r.stdout}`);
      return run.id;
    };
    regress("{time_us: 120, noise_pct: 0.2, stage_ms: 50}", 0);
    const regId = regress("{time_us: 120, noise_pct: 0.2, stage_ms: 50, slower_pct: {L4: 6}}", 1);
    await page.goto(`${base}/#/regressions`);
    await page.waitForSelector(`a[href='#/regressions/${regId}']`, { timeout: 15000 });
    await shot(page, "regressions");
    await page.click(`a[href='#/regressions/${regId}']`);
    await page.waitForSelector("#matrix .cell", { timeout: 15000 });
    const gemm = (await page.textContent("#matrix .cell[data-kernel='suite/gemm'][data-gpu=L4]")).replace(/\s+/g, " ");
    check(/\+[56]\.\d%/.test(gemm) && gemm.includes("regressed"),
      `suite/gemm × L4 shows a ~+6% delta with its CI and 'regressed' (got '${gemm}')`);
    check(/\[[+-]\d+\.\d%, [+-]\d+\.\d%\]/.test(gemm), `the cell shows the CI of its delta (got '${gemm}')`);
    const attn = (await page.textContent("#matrix .cell[data-kernel='suite/attn'][data-gpu=L4]")).replace(/\s+/g, " ");
    check(attn.includes("same"), `suite/attn × L4 is 'same' (got '${attn}')`);
    check(await page.isVisible("#matrix .cell .badge.sim"), "simulated cells are marked SIMULATED");
    check(await page.isVisible("#matrix .cell[data-kernel='suite/gemm'] .versus[data-baseline=eager]"),
      "each cell shows its speedup over PyTorch");
    check(await page.isVisible("#fast-p [data-baseline=compile][data-p='1.5']"), "the run shows fast_p");
    await shot(page, "regression-matrix");
    console.log(`ok: regression run #${regId} from two real suite runs: only suite/gemm × L4 regressed`);

    // Data a short run cannot produce, through the same page: a blocked region (a cloud stockout).
    await checkBlockCountdown(page, base, shot);
    console.log("ok: region block countdown");

    check(pageErrors.length === 0, `no script errors in the page (got: ${pageErrors.join("; ")})`);
    console.log("PASS: dashboards browser test");
  } catch (err) {
    failed = true;
    console.error(`FAIL: ${err.message}\n  (process output: ${join(o.screenshots, "processes.log")})`);
    if (context) {
      try { await context.pages()[0]?.screenshot({ path: join(o.screenshots, "failure.png") }); } catch { /* best effort */ }
    }
  } finally {
    if (context) await context.close().catch(() => {});
    await killAll();
    log.end();
    rmSync(tmp, { recursive: true, force: true });
  }
  process.exitCode = failed ? 1 : 0;
}

for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => { void killAll().then(() => process.exit(1)); });
main().catch(async (err) => { console.error(`FAIL: ${err.message}`); await killAll(); process.exitCode = 1; });
