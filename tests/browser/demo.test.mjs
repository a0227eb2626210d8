// What a newcomer sees: runs scripts/demo.sh itself (on the built binaries, no install), checks
// its output has the three parts with real compiler numbers, then opens the dashboard URL the
// demo printed in a real headless chromium and checks that the pages render its data, the job
// page at a phone's width (390 px) included.
//
// Usage: node tests/browser/demo.test.mjs --build-dir BUILD [--screenshots DIR] [--chromium BIN]
// Exit status 0 only when every check passed; a missing chromium, node module or binary fails.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { api, check, loadPlaywright, openBrowser, parseOptions, setApiToken, waitFor } from "./harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");

function options() {
  const o = {
    buildDir: process.env.KFLEET_BUILD_DIR ?? join(repo, "build"),
    screenshots: process.env.KFLEET_SCREENSHOTS ?? "",
    chromium: process.env.CHROMIUM ?? "/usr/bin/chromium",
  };
  parseOptions(o, { "--build-dir": "buildDir", "--screenshots": "screenshots", "--chromium": "chromium" });
  if (!existsSync(join(o.buildDir, "orchestrator", "api", "kfleetd")))
    throw new Error(`--build-dir ${o.buildDir} has no built kfleetd`);
  return o;
}

async function main() {
  const o = options();
  const { chromium } = loadPlaywright(repo);
  const tmp = mkdtempSync(join(tmpdir(), "kfleet-demo-test-"));
  const shots = o.screenshots || join(tmp, "screenshots");
  mkdirSync(shots, { recursive: true });
  let demo = null, context = null, failed = false, output = "";
  const t0 = Date.now();
  try {
    // The demo exactly as documented, minus the install and build (ctest built it), kept up
    // after its parts so the browser can look; its run dir goes under our temp dir.
    demo = spawn("bash", [join(repo, "scripts", "demo.sh"), "--no-build", "--keep", "--build-dir", o.buildDir],
      { cwd: repo, env: { ...process.env, TMPDIR: tmp }, stdio: ["ignore", "pipe", "pipe"], detached: true });
    demo.stdout.on("data", (d) => { output += d; process.stdout.write(d); });
    demo.stderr.on("data", (d) => { output += d; process.stderr.write(d); });
    demo.exited = new Promise((r) => demo.on("exit", (code, sig) => r({ code, sig })));
    const url = await waitFor("the demo to print its dashboards URL", () => {
      if (demo.exitCode !== null) throw new Error(`demo.sh exited with ${demo.exitCode} before printing it`);
      return /demo: dashboards +(http:\/\/127\.0\.0\.1:\d+\/)/.exec(output)?.[1];
    }, 480000, 500);
    // The demo makes a fresh admin token and says where it is (a 0600 file): sign in with it.
    const tokenFile = /sign in with the admin token in (\S+?)\)/.exec(output)?.[1];
    check(tokenFile && existsSync(tokenFile), `the demo names its admin token file (got '${tokenFile}')`);
    const token = readFileSync(tokenFile, "utf8").trim();
    check((statSync(tokenFile).mode & 0o077) === 0, "the admin token file is readable by its owner only");
    check(!output.includes(token), "the demo never prints a token");
    setApiToken(token);
    const seconds = Math.round((Date.now() - t0) / 1000);
    console.log(`ok: the demo's three parts took ${seconds} s; it prints ${url}`);

    // 1. Real builds: ptxas registers for the CUDA seeds, AMDGPU VGPRs for the HIP one, and the
    // jobs that break their budget stop at the compile agent.
    check(/resources\]? regs \d+ smem/.test(output), "a ptxas resources line (regs, smem)");
    check(/vgprs \d+ sgprs \d+/.test(output), "an AMDGPU resources line (vgprs, sgprs) for the gfx1151 job");
    check(!/regs 96 smem 37\.1 KB/.test(output), "no simulated stand-in resources");
    check(output.includes("handed on"), "a job is handed from the compile agent to a GPU agent");
    check(output.includes("[simulated]"), "GPU results are marked simulated");
    // 2. The stockout fallback.
    check(/capacity us-central1-a: stockout/.test(output), "the first zone's stockout is printed");
    check(/capacity southamerica-east1-c: ok/.test(output), "the job falls back to the next zone");
    // 3. The regression matrix with a verdict.
    check(/REGRESSED/.test(output), "the regression matrix names the regressed cell");
    check(/demo\/scale-b/.test(output) && /gfx1151/.test(output), "the matrix lists the kernels and classes");

    // The URL it printed opens the dashboards, with the demo's data.
    const browser = await openBrowser(chromium, o.chromium, join(tmp, "chromium-profile"));
    context = browser.context;
    const { page, pageErrors } = browser;
    const res = await page.goto(url);
    check(res && res.status() === 200, `GET ${url} answers 200 (got ${res?.status()})`);
    await page.waitForSelector("#login", { timeout: 15000 });
    await page.fill("#login-token", token);
    await page.click("#login button");
    await page.waitForSelector("#feed-status[data-state=live]", { timeout: 15000 });
    await page.waitForSelector("#verdicts tr:has-text('demo/fallback')", { timeout: 15000 });
    await page.screenshot({ path: join(shots, "demo-queue.png") });

    await page.goto(`${url}#/fleet`);
    await page.waitForSelector("tr:has-text('build-0')", { timeout: 15000 });
    await page.waitForSelector("tr:has-text('sim-gfx1151')", { timeout: 15000 });
    check((await page.textContent("#app")).includes("southamerica-east1-c"), "the fleet shows the fallback zone's agent");
    await page.screenshot({ path: join(shots, "demo-fleet.png") });

    const { jobs } = await api(url.replace(/\/$/, ""), "/api/v1/jobs?limit=200");
    const hip = jobs.find((j) => j.name === "scaled-mm-hip/stepC09");
    const fallback = jobs.find((j) => j.name === "demo/fallback");
    check(hip && hip.state === "passed", `the HIP seed passed (got ${hip?.state})`);
    check(fallback && fallback.state === "passed", `demo/fallback passed (got ${fallback?.state})`);

    // The HIP job's page: AMDGPU numbers from clang-19, built on build-0, timed on the simulated agent.
    await page.goto(`${url}#/jobs/${hip.id}`);
    await page.waitForSelector("#resources tbody tr", { timeout: 15000 });
    const resText = (await page.textContent("#resources")).replace(/\s+/g, " ");
    check(/scaled_mm/.test(resText) && /\d+( \/ \d+)? VGPR/.test(resText), `resources show the kernel's VGPRs (got '${resText}')`);
    check((await page.textContent("#built-by")).includes("build-0"), "the page says the compile agent built it");
    check((await page.textContent("#ran-by")).includes("sim-gfx1151"), "the page says which agent ran the GPU stages");
    check(await page.isVisible("#verdict .badge.sim"), "its verdict is marked SIMULATED");

    // At a phone's width the page does not scroll sideways: wide tables scroll in their card.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${url}#/jobs/${fallback.id}`);
    await page.waitForSelector("#event-log tbody tr", { timeout: 15000 });
    const widths = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth, view: window.innerWidth,
      log: (() => { const w = document.querySelector("#event-log .table-wrap"); return w ? [w.scrollWidth, w.clientWidth] : null; })(),
    }));
    check(widths.page <= widths.view, `the job page fits 390 px (scrollWidth ${widths.page} > ${widths.view})`);
    check(widths.log && widths.log[0] > widths.log[1], `the event table scrolls inside its card (${JSON.stringify(widths.log)})`);
    await page.screenshot({ path: join(shots, "demo-job-390px.png"), fullPage: true });

    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${url}#/regressions`);
    await page.waitForSelector("a[href^='#/regressions/']", { timeout: 15000 });
    await page.click("a[href^='#/regressions/']");  // newest first: the second run
    await page.waitForSelector("#matrix .cell", { timeout: 15000 });
    const cell = (await page.textContent("#matrix .cell[data-kernel='demo/scale-b'][data-gpu=gfx1151]")).replace(/\s+/g, " ");
    check(cell.includes("regressed"), `demo/scale-b × gfx1151 is regressed (got '${cell}')`);
    await page.screenshot({ path: join(shots, "demo-regression.png") });

    check(pageErrors.length === 0, `no script errors in the page (got: ${pageErrors.join("; ")})`);
    console.log("PASS: the demo runs, and the dashboards it prints open with its data");
  } catch (err) {
    failed = true;
    console.error(`FAIL: ${err.message}`);
    if (context) {
      try { await context.pages()[0]?.screenshot({ path: join(shots, "failure.png") }); } catch { /* best effort */ }
    }
  } finally {
    if (context) await context.close().catch(() => {});
    if (demo && demo.exitCode === null) {
      // The demo's trap stops kfleetd and its agents; the whole group goes if it does not.
      try { process.kill(-demo.pid, "SIGTERM"); } catch { /* gone */ }
      const ended = await Promise.race([demo.exited, new Promise((r) => setTimeout(() => r(null), 10000))]);
      if (!ended) { try { process.kill(-demo.pid, "SIGKILL"); } catch { /* gone */ } }
    }
    // A failure keeps the demo's run dir (its process logs) and the screenshots for a look.
    if (failed) {
      writeFileSync(join(shots, "demo-output.txt"), output);
      console.error(`  kept ${tmp} (the demo's run dir and logs) and ${shots}`);
    } else {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  process.exitCode = failed ? 1 : 0;
}

main().catch((err) => { console.error(`FAIL: ${err.message}`); process.exitCode = 1; });
