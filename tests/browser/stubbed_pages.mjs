// Checks for data kfleetd cannot easily produce in a short test: a region block (needs a cloud
// stockout) and a regression matrix (its endpoint may not exist yet). The browser's requests
// are answered by Playwright routes; the pages still render through their real code paths.
import { check, waitFor } from "./harness.mjs";

/** "1 min 05 s" / "45 s" back to seconds; NaN when the text is not a countdown. */
function seconds(text) {
  const m = /(?:(\d+) min )?(\d+) s/.exec(text ?? "");
  return m ? Number(m[1] ?? 0) * 60 + Number(m[2]) : NaN;
}

/** Fleet page with one stockout block added to kfleetd's real answer: shown and counting down. */
export async function checkBlockCountdown(page, base, shot) {
  const block = { provider: "simulated", region: "ap-south-1", gpu_class: "L4", kind: "stockout",
    reason: "InsufficientInstanceCapacity: no L4 capacity in ap-south-1a", strikes: 2, seconds_left: 95 };
  await page.route("**/api/v1/agents", async (route) => {
    const res = await route.fetch();
    const body = await res.json();
    body.blocks = [...(body.blocks ?? []), block];
    await route.fulfill({ response: res, json: body });
  });
  try {
    await page.goto(`${base}/#/fleet`);
    const cell = "#blocks tr:has-text('ap-south-1') [data-block]";
    await page.waitForSelector(cell, { timeout: 15000 });
    const row = await page.textContent("#blocks tr:has-text('ap-south-1')");
    check(row.includes("stockout") && row.includes(block.reason), "block row shows its kind and reason");
    const first = seconds(await page.textContent(cell));
    check(first > 0 && first <= 95, `block shows time left (got '${await page.textContent(cell)}')`);
    await waitFor("the block's time left to count down", async () =>
      seconds(await page.textContent(cell)) < first, 5000, 100);
    await shot(page, "fleet-blocked", { docs: false });
  } finally {
    await page.unroute("**/api/v1/agents");
  }
}

/** Regression list and matrix pages rendered from answers in the documented shape. */
export async function checkRegressionMatrix(page, base, shot) {
  const cells = [
    { kernel: "fp8_sdpa", gpu_class: "L4", job_id: 2, delta_pct: 6.1, ci_low_pct: 5.6, ci_high_pct: 6.4, verdict: "regressed", simulated: true },
    { kernel: "fp8_sdpa", gpu_class: "H100", job_id: 1, delta_pct: -0.2, ci_low_pct: -0.6, ci_high_pct: 0.3, verdict: "same", simulated: true },
    { kernel: "gemm_fp8", gpu_class: "L4", job_id: 1, delta_pct: -4.3, ci_low_pct: -5.0, ci_high_pct: -3.7, verdict: "improved", simulated: true },
  ];
  const regression = { id: 7, suite: "attention-suite", created: "2025-10-20T12:00:00Z", state: "finished", cells };
  await page.route("**/api/v1/regressions", (route) => route.fulfill({ json: { regressions: [regression] } }));
  await page.route("**/api/v1/regressions/7", (route) => route.fulfill({ json: { regression } }));
  try {
    await page.goto(`${base}/#/regressions`);
    await page.waitForSelector("a[href='#/regressions/7']", { timeout: 15000 });
    await page.click("a[href='#/regressions/7']");
    await page.waitForSelector("#matrix .cell", { timeout: 15000 });
    const l4 = await page.textContent("#matrix .cell[data-kernel=fp8_sdpa][data-gpu=L4]");
    check(l4.includes("+6.1%") && l4.includes("[+5.6%, +6.4%]") && l4.includes("regressed"),
      `fp8_sdpa × L4 cell shows delta, CI and verdict (got '${l4.replace(/\s+/g, " ")}')`);
    const gemm = await page.textContent("#matrix .cell[data-kernel=gemm_fp8][data-gpu=L4]");
    check(gemm.includes("-4.3%") && gemm.includes("improved"), "gemm_fp8 × L4 cell shows its improvement");
    check((await page.textContent("#matrix tr:has-text('gemm_fp8')")).includes("—"), "a missing cell shows a dash");
    check(await page.isVisible("#matrix .cell .badge.sim"), "simulated cells are marked SIMULATED");
    await shot(page, "regression-matrix", { docs: false });
  } finally {
    await page.unroute("**/api/v1/regressions");
    await page.unroute("**/api/v1/regressions/7");
  }
}
