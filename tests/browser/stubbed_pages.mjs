// Checks for data kfleetd cannot easily produce in a short test: a region block (needs a cloud
// stockout). The browser's requests are answered by Playwright routes; the page still renders
// through its real code path.
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
  await page.route("**/api/v1/agents?*", async (route) => {
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
    await page.unroute("**/api/v1/agents?*");
  }
}
