// Campaigns: the headline metric (median µs) along a campaign's lineage, with what was kept
// and what was rejected and why; for a problem's kernels, the speedup over kfleet's PyTorch
// references (eager, torch.compile) along the lineage with its interval, and fast_p.
import { getJson, Json } from "../api";
import { Chart } from "../charts";
import { baselineLabel, esc, fastPCard, firstLine, jobLink, num, pct, simBadge, simBanner, stateBadge, table, versusCell } from "../dom";
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
const VERSUS_COLOURS: Record<string, string> = { eager: "#2563eb", compile: "#ea580c" };

/** A job's comparison with one of kfleet's PyTorch references, if it has one with a speedup. */
export function speedupOf(job: Json, baseline: string): Json | null {
  const c = (job.verdict?.versus ?? []).find((x: Json) => x.baseline === baseline);
  return c && typeof c.speedup === "number" ? c : null;
}

/** The speedup chart's datasets: per reference, the speedup at each job and its interval as a band. */
export function speedupDatasets(jobs: Json[]): Json[] {
  const out: Json[] = [];
  for (const b of ["eager", "compile"]) {
    const at = jobs.map((j) => speedupOf(j, b));
    if (!at.some((c) => c)) continue;
    const colour = VERSUS_COLOURS[b];
    out.push({ label: `× ${baselineLabel(b)}`, data: at.map((c) => c?.speedup ?? null), borderColor: colour,
      backgroundColor: colour, pointRadius: 5, spanGaps: true, baseline: b });
    out.push({ label: `${baselineLabel(b)} 95% low`, data: at.map((c) => c?.ci_low ?? c?.speedup ?? null),
      borderWidth: 0, pointRadius: 0, fill: false, spanGaps: true, band: true });
    out.push({ label: `${baselineLabel(b)} 95% high`, data: at.map((c) => c?.ci_high ?? c?.speedup ?? null),
      borderWidth: 0, pointRadius: 0, fill: "-1", backgroundColor: `${colour}33`, spanGaps: true, band: true });
  }
  return out;
}

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
  let versusChart: Chart | null = null;
  const refresh = async (): Promise<void> => {
    let list: Json;
    let view: Json = null;
    try {
      [list, view] = await Promise.all([
        getJson(`/api/v1/jobs?campaign=${encodeURIComponent(name)}&limit=1000`),
        // fast_p comes with the campaign's view; a kfleetd without it reads as none.
        getJson(`/api/v1/campaigns/${encodeURIComponent(name)}`).catch(() => null),
      ]);
    } catch (err) { showError(el, err); return; }
    // The API lists newest first; the lineage reads oldest first.
    const jobs: Json[] = [...list.jobs].sort((a, b) => a.id - b.id);
    const byName = new Map(jobs.map((j) => [j.name, j]));
    const rows = jobs.map((j) => {
      const v = j.verdict || {};
      const parent = j.parent ? (byName.get(j.parent) ? jobLink(byName.get(j.parent).id, j.parent) : esc(j.parent)) : "—";
      return [jobLink(j.id, j.name) + simBadge(j.simulated || v.simulated), parent,
        `<span class="mark-${markOf(j)}" style="color:${COLOURS[markOf(j)]}">${markOf(j)}</span>`,
        stateBadge(j.state), `<span class="num">${num(v.median_us)}</span>`, pct(v.delta_pct), versusCell(v.versus),
        `<span class="reason">${esc(firstLine(v.reason || j.state_reason || ""))}</span>`];
    });
    const measured = jobs.filter((j) => typeof j.verdict?.median_us === "number");
    const compared = jobs.filter((j) => speedupOf(j, "eager") || speedupOf(j, "compile"));
    el.innerHTML = `
      <h1>Campaign <span id="campaign-name">${esc(name)}</span></h1>${simBanner(jobs.some((j) => j.simulated))}
      <section class="card" id="lineage-chart"><h2>Median kernel time along the lineage (µs, lower is better)</h2>
        ${measured.length ? `<div class="chart-box"><canvas id="campaign-chart" aria-label="median along lineage"></canvas></div>`
                          : `<p class="empty">No job of this campaign has a measured median yet.</p>`}
        <p class="muted"><span style="color:${COLOURS.kept}">●</span> kept (passed)
          <span style="color:${COLOURS.rejected}">✖</span> rejected</p></section>
      ${compared.length ? `<section class="card" id="versus-chart-card"><h2>Speedup over kfleet's PyTorch references along the lineage
          (×, above 1: faster than PyTorch)${simBadge(compared.some((j) => j.verdict?.versus?.some((c: Json) => c.simulated)))}</h2>
        <div class="chart-box"><canvas id="versus-chart" aria-label="speedup over eager and torch.compile along the lineage"></canvas></div>
        <p class="muted">each point: the reference's median / the kernel's median on the timed case; the band: its 95% interval</p></section>` : ""}
      ${fastPCard(view?.campaign?.fast_p, jobs.flatMap((j) => j.verdict?.versus ?? []))}
      <section class="card" id="lineage"><h2>Lineage</h2>
        ${table(["Job", "Parent", "Kept?", "State", "Median µs", "Δ vs parent", "vs PyTorch", "Reason"], rows,
                `No jobs in campaign ${name} yet.`)}</section>`;

    versusChart?.destroy();
    versusChart = null;
    const vcanvas = el.querySelector<HTMLCanvasElement>("#versus-chart");
    if (vcanvas) {
      versusChart = new Chart(vcanvas, {
        type: "line",
        data: { labels: compared.map((j) => j.name), datasets: speedupDatasets(compared) },
        options: {
          animation: false, responsive: true, maintainAspectRatio: false,
          plugins: { legend: { labels: { filter: (item, data) => !(data.datasets[item.datasetIndex ?? 0] as Json).band } },
            tooltip: { filter: (item) => !(item.dataset as Json).band,
              callbacks: { afterLabel: (ctx) => {
                const c = speedupOf(compared[ctx.dataIndex], (ctx.dataset as Json).baseline);
                return c && typeof c.ci_low === "number" ? `95% [${c.ci_low.toFixed(2)}, ${c.ci_high.toFixed(2)}]` : "";
              } } } },
          scales: { y: { title: { display: true, text: "speedup (×)" } } },
        },
      });
      vcanvas.dataset.drawn = "1";
    }

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
  return () => { stop(); chart?.destroy(); versusChart?.destroy(); };
}
