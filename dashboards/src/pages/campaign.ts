// Campaigns: the headline metric (median µs) along a campaign's lineage, with what was kept
// and what was rejected and why.
import { getJson, Json } from "../api";
import { Chart } from "../charts";
import { esc, jobLink, num, pct, simBadge, simBanner, stateBadge, table } from "../dom";
import { keepFresh, showError } from "../live";

/** Kept means it passed every gate; rejected ones carry the reason the chart shows. */
export function markOf(job: Json): "kept" | "rejected" | "error" | "pending" {
  const o = job.verdict?.outcome ?? job.state;
  if (o === "passed") return "kept";
  if (o === "rejected") return "rejected";
  if (o === "error" || o === "cancelled") return "error";
  return "pending";
}

const COLOURS = { kept: "#16a34a", rejected: "#dc2626", error: "#6b7280", pending: "#93c5fd" };

/** Mounts the list of campaigns into `el`; returns its teardown. */
export function mountCampaignList(el: HTMLElement): () => void {
  const refresh = async (): Promise<void> => {
    let list: Json;
    try { list = await getJson("/api/v1/jobs?limit=1000"); } catch (err) { showError(el, err); return; }
    const by = new Map<string, Json[]>();
    for (const j of list.jobs as Json[]) if (j.campaign) by.set(j.campaign, [...(by.get(j.campaign) ?? []), j]);
    const rows = [...by.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, jobs]) => [
      `<a href="#/campaigns/${encodeURIComponent(name)}">${esc(name)}</a>${simBadge(jobs.some((j) => j.simulated))}`,
      String(jobs.length), String(jobs.filter((j) => markOf(j) === "kept").length),
      String(jobs.filter((j) => markOf(j) === "rejected").length)]);
    el.innerHTML = `<h1>Campaigns</h1><section class="card">
      ${table(["Campaign", "Jobs", "Kept", "Rejected"], rows, "No campaigns yet: jobs name theirs with `campaign:`.")}</section>`;
  };
  return keepFresh(refresh, (e) => e.type === "job.submitted" || e.type === "job.state", 500);
}

/** Mounts the page of campaign `name` into `el`; returns its teardown. */
export function mountCampaign(el: HTMLElement, name: string): () => void {
  let chart: Chart | null = null;
  const refresh = async (): Promise<void> => {
    let list: Json;
    try { list = await getJson(`/api/v1/jobs?campaign=${encodeURIComponent(name)}&limit=1000`); }
    catch (err) { showError(el, err); return; }
    // The API lists newest first; the lineage reads oldest first.
    const jobs: Json[] = [...list.jobs].sort((a, b) => a.id - b.id);
    const byName = new Map(jobs.map((j) => [j.name, j]));
    const rows = jobs.map((j) => {
      const v = j.verdict || {};
      const parent = j.parent ? (byName.get(j.parent) ? jobLink(byName.get(j.parent).id, j.parent) : esc(j.parent)) : "—";
      return [jobLink(j.id, j.name) + simBadge(j.simulated || v.simulated), parent,
        `<span class="mark-${markOf(j)}" style="color:${COLOURS[markOf(j)]}">${markOf(j)}</span>`,
        stateBadge(j.state), `<span class="num">${num(v.median_us)}</span>`, pct(v.delta_pct),
        `<span class="reason">${esc(v.reason || j.state_reason || "")}</span>`];
    });
    const measured = jobs.filter((j) => typeof j.verdict?.median_us === "number");
    el.innerHTML = `
      <h1>Campaign <span id="campaign-name">${esc(name)}</span></h1>${simBanner(jobs.some((j) => j.simulated))}
      <section class="card" id="lineage-chart"><h2>Median kernel time along the lineage (µs, lower is better)</h2>
        ${measured.length ? `<div class="chart-box"><canvas id="campaign-chart" aria-label="median along lineage"></canvas></div>`
                          : `<p class="empty">No job of this campaign has a measured median yet.</p>`}
        <p class="muted"><span style="color:${COLOURS.kept}">●</span> kept (passed)
          <span style="color:${COLOURS.rejected}">✖</span> rejected</p></section>
      <section class="card" id="lineage"><h2>Lineage</h2>
        ${table(["Job", "Parent", "Kept?", "State", "Median µs", "Δ vs parent", "Reason"], rows,
                `No jobs in campaign ${name} yet.`)}</section>`;

    chart?.destroy();
    chart = null;
    const canvas = el.querySelector<HTMLCanvasElement>("#campaign-chart");
    if (!canvas) return;
    const marks = measured.map(markOf);
    chart = new Chart(canvas, {
      type: "line",
      data: {
        labels: measured.map((j) => j.name),
        datasets: [{
          label: "median µs", data: measured.map((j) => j.verdict.median_us), borderColor: "#94a3b8",
          pointRadius: 7, pointHoverRadius: 9, pointStyle: marks.map((m) => (m === "rejected" ? "crossRot" : "circle")),
          pointBorderWidth: marks.map((m) => (m === "rejected" ? 3 : 1)),
          pointBackgroundColor: marks.map((m) => COLOURS[m]), pointBorderColor: marks.map((m) => COLOURS[m]),
        }],
      },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        plugins: { tooltip: { callbacks: { afterLabel: (ctx) => measured[ctx.dataIndex].verdict.reason ?? "" } } },
        scales: { y: { title: { display: true, text: "median µs" } } },
      },
    });
    canvas.dataset.drawn = "1";
  };
  const stop = keepFresh(refresh, (e) => e.type === "job.submitted" || e.type === "job.state" || e.type === "verdict", 400);
  return () => { stop(); chart?.destroy(); };
}
