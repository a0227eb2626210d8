// Queue & live runs: what waits (and why), what runs (and at which stage), what just finished.
import { feed, FeedEvent, getJson, Json } from "../api";
import { ago, esc, firstLine, jobLink, pct, simBadge, simBanner, stateBadge, table, trustBadges, versusCell } from "../dom";
import { keepFresh, showError } from "../live";

const WAITING = "queued,waiting_capacity";
const RUNNING = "leased,building,gating,benchmarking";

function campaignLink(c: string | undefined): string {
  return c ? `<a href="#/campaigns/${encodeURIComponent(c)}">${esc(c)}</a>` : "—";
}

function eventSummary(e: FeedEvent): string {
  const d = e.data || {};
  if (e.type === "job.state") return `${esc(d.state)}${d.reason ? ": " + esc(d.reason) : ""}`;
  if (e.type.startsWith("stage.")) return esc(d.stage) + (d.reason ? ": " + esc(d.reason) : "");
  if (e.type === "verdict") return esc(firstLine(d.reason) || d.status || d.outcome);
  if (e.type === "sched.decision") return esc(`${d.action ?? ""} ${d.reason ?? ""}`);
  return "";
}

/** Mounts the queue page into `el`; returns its teardown. */
export function mountQueue(el: HTMLElement): () => void {
  const refresh = async (): Promise<void> => {
    let waiting: Json, running: Json, results: Json;
    try {
      [waiting, running, results] = await Promise.all([
        getJson(`/api/v1/jobs?state=${WAITING}&limit=200`),
        getJson(`/api/v1/jobs?state=${RUNNING}&limit=200`),
        getJson(`/api/v1/results?limit=15`),
      ]);
    } catch (err) { showError(el, err); return; }
    // A run's stage lives on the run; the few running jobs make one request each worthwhile.
    const runs = await Promise.all((running.jobs as Json[]).map((j) =>
      j.current_run_id ? getJson(`/api/v1/runs/${j.current_run_id}`).then((r) => r.run, () => null)
                       : Promise.resolve(null)));
    const anySim = [...waiting.jobs, ...running.jobs].some((j: Json) => j.simulated) ||
                   results.results.some((r: Json) => r.run?.simulated || r.job?.simulated);

    const waitRows = (waiting.jobs as Json[]).map((j) => [
      jobLink(j.id, j.name) + simBadge(j.simulated), stateBadge(j.state),
      esc(j.state_reason || "waiting for a free agent"), esc(j.gpu), esc((j.regions || []).join(", ") || "any"),
      String(j.priority ?? 0), ago(j.created),
    ]);
    const runRows = (running.jobs as Json[]).map((j, i) => [
      jobLink(j.id, j.name) + simBadge(j.simulated), stateBadge(j.state),
      `<span class="stage" data-stage="${esc(runs[i]?.stage)}">${esc(runs[i]?.stage || j.state)}</span>`,
      runs[i] ? `run ${runs[i].id} · agent ${runs[i].agent_id} · attempt ${runs[i].attempt}` : "—",
      ago(runs[i]?.started ?? j.updated),
    ]);
    const verdictRows = (results.results as Json[]).map(({ run, job }) => {
      const v = run.verdict || job.verdict || {};
      return [jobLink(job.id, job.name) + simBadge(run.simulated || job.simulated || v.simulated) + trustBadges(v),
        stateBadge(v.outcome || run.outcome), esc(v.gate || ""), `<span class="reason">${esc(firstLine(v.reason))}</span>`,
        `<span class="num">${pct(v.delta_pct)}</span>`, versusCell(v.versus), campaignLink(job.campaign), ago(run.finished)];
    });
    const events = feed.recent.slice(-12).reverse().map((e) => [
      String(e.id), jobLink(e.job_id), esc(e.type), eventSummary(e),
    ]);
    el.innerHTML = `
      <h1>Queue &amp; live runs</h1>${simBanner(anySim)}
      <section class="card" id="waiting"><h2>Waiting (${waitRows.length})</h2>
        ${table(["Job", "State", "Why it waits", "GPU", "Regions", "Priority", "Submitted"], waitRows, "Nothing is waiting.")}</section>
      <section class="card" id="running"><h2>Running (${runRows.length})</h2>
        ${table(["Job", "State", "Stage", "Run", "Started"], runRows, "Nothing is running.")}</section>
      <section class="card" id="verdicts"><h2>Recent verdicts</h2>
        ${table(["Job", "Outcome", "Gate", "Reason", "Δ", "vs PyTorch", "Campaign", "Finished"], verdictRows, "No finished runs yet.")}</section>
      <section class="card" id="events"><h2>Live events</h2>
        ${table(["#", "Job", "Type", "Detail"], events, "No events since this page opened.", "log")}</section>`;
  };
  return keepFresh(refresh, (e) => e.job_id > 0, 250, 10000);
}
