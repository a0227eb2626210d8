// One job: its gates (resources, correctness per case and seed), the verdict, the timing
// distribution, clocks, the profile, and every event, following the newest run live.
import { getJson, HttpError, Json } from "../api";
import { Chart, histogram } from "../charts";
import { ago, baselineLabel, esc, firstLine, num, pct, simBadge, simBanner, stateBadge, table, trustBadges,
  versusKeyText } from "../dom";
import { keepFresh, showError } from "../live";

function okMark(ok: unknown): string {
  return ok ? `<span class="ok">PASS</span>` : `<span class="bad">FAIL</span>`;
}

function budgetCell(used: unknown, budget: unknown): string {
  const over = typeof used === "number" && typeof budget === "number" && used > budget;
  return `<span class="${over ? "bad" : ""}">${esc(used ?? "—")}</span>` +
         (budget !== undefined ? ` <span class="muted">/ ${esc(budget)}</span>` : "");
}

/** The verdict as one sentence, e.g. "rejected at performance: do not merge: +6.1% ...". */
export function verdictLine(v: Json, state: string): string {
  if (!v || !v.outcome) return `<div class="verdict-line" id="verdict">No verdict yet: ${stateBadge(state)}</div>`;
  const gate = v.gate ? ` at ${esc(v.gate)}` : "";
  const perf = v.median_us !== undefined
    ? ` <span class="muted">· median ${num(v.median_us)} µs${v.baseline_us ? ` vs ${num(v.baseline_us)} µs` : ""}` +
      `${v.delta_pct !== undefined ? `, Δ ${pct(v.delta_pct)} [${pct(v.ci_low_pct)}, ${pct(v.ci_high_pct)}]` : ""}</span>`
    : "";
  // A problem's kernel's reason ends with how it compares with PyTorch: its own line.
  const reason = String(v.reason || "");
  const rest = reason.includes("\n") ? reason.slice(reason.indexOf("\n") + 1) : "";
  return `<div class="verdict-line ${esc(v.outcome)}" id="verdict">${stateBadge(v.outcome)}${gate}:
    <span class="reason">${esc(firstLine(reason))}</span>${simBadge(v.simulated)}${trustBadges(v)}${perf}
    ${rest ? `<div class="versus-line" id="verdict-versus">${esc(rest)}</div>` : ""}</div>`;
}

/** A Python launch's kernels (the recorder's report, verdict.metrics.kernels): each one's name
 *  and where its device code came from, the job's code or a library with its file and version. */
export function kernelsCard(report: Json | undefined): string {
  const list: Json[] = Array.isArray(report?.kernels) ? report.kernels : [];
  if (list.length === 0) return "";
  const rows = list.map((k) => [`<code class="kernel-name" title="${esc(k.function)}">${esc(String(k.function ?? "").slice(0, 64))}</code>`,
    `<span class="origin" data-origin="${k.origin === "library" ? "library" : "job"}">${k.origin === "library" ? "library" : "job"}</span>`,
    esc(k.origin === "library" ? [k.file, k.package].filter((x: unknown) => x).join(" ") : (k.how ?? ""))]);
  const more = typeof report?.more === "number" && report.more > 0 ? `<p class="muted">and ${report.more} more</p>` : "";
  return `<section class="card" id="kernels"><h2>Kernels launched${simBadge(report?.simulated)}
    <span class="muted">as the recorder reported them</span></h2>
    ${table(["Kernel", "Origin", "From"], rows, "")}${more}</section>`;
}

/** A problem's kernel against kfleet's PyTorch references: each speedup with its interval, the
 *  reference's median, whether it came from the agent's cache, the note, and the cache key. */
export function versusCard(versus: Json[] | undefined): string {
  if (!Array.isArray(versus) || versus.length === 0) return "";
  const rows = versus.map((c) => [esc(baselineLabel(c.baseline)) + simBadge(c.simulated),
    typeof c.speedup === "number"
      ? `<span class="num versus ${c.speedup > 1 ? "faster" : "slower"}" data-baseline="${esc(c.baseline)}">${c.speedup.toFixed(2)}x</span>`
      : `<span class="muted">not timed</span>`,
    typeof c.ci_low === "number" ? `[${num(c.ci_low, 2)}, ${num(c.ci_high, 2)}]` : "—",
    typeof c.reference_us === "number" ? `${num(c.reference_us)} µs` : "—",
    c.cached ? "cached" : "timed in this run", esc(c.note ?? "")]);
  const keys = [...new Set(versus.map((c) => versusKeyText(c.key)).filter((k) => k))];
  return `<section class="card" id="versus"><h2>Against PyTorch <span class="muted">${esc(versus[0]?.case ?? "")}</span></h2>
    ${table(["Reference", "Speedup", "95% interval", "Reference median", "Timing", "Note"], rows, "")}
    ${keys.map((k) => `<p class="muted versus-key">cached by: ${esc(k)}</p>`).join("")}
    <p class="muted">speedup = the reference's median / the kernel's median, both replayed on this agent: above 1 the kernel is faster.</p></section>`;
}

/** A unified diff, each line coloured by its first character. */
function diffBlock(diff: string): string {
  const lines = diff.replace(/\n$/, "").split("\n").map((l) => {
    const cls = l.startsWith("+++") || l.startsWith("---") ? "diff-head"
      : l.startsWith("@@") ? "diff-hunk" : l.startsWith("+") ? "diff-add" : l.startsWith("-") ? "diff-del" : "";
    return `<span class="${cls}">${esc(l)}</span>`;
  });
  return `<pre class="diff">${lines.join("\n")}</pre>`;
}

/** One change at a time: what a child submitted as parent + change differs in from its parent. */
export function changeCard(c: Json): string {
  if (!c || typeof c !== "object") return "";
  const items: string[] = [];
  const scalar = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v));
  for (const [k, v] of Object.entries(c.defines?.removed ?? {})) items.push(`<li class="diff-del">− define ${esc(k)}=${esc(scalar(v))}</li>`);
  for (const [k, v] of Object.entries(c.defines?.changed ?? {}) as [string, Json][])
    items.push(`<li>~ define ${esc(k)}=${esc(scalar(v.to))} <span class="muted">(was ${esc(scalar(v.from))})</span></li>`);
  for (const [k, v] of Object.entries(c.defines?.added ?? {})) items.push(`<li class="diff-add">+ define ${esc(k)}=${esc(scalar(v))}</li>`);
  for (const f of c.flags?.removed ?? []) items.push(`<li class="diff-del">− flag ${esc(f)}</li>`);
  for (const f of c.flags?.added ?? []) items.push(`<li class="diff-add">+ flag ${esc(f)}</li>`);
  for (const o of c.other ?? []) items.push(`<li>~ ${esc(o.field)}: ${esc(JSON.stringify(o.from))} → ${esc(JSON.stringify(o.to))}</li>`);
  const files = (c.files ?? []).map((f: Json) => `<h3>${esc(f.path)} <span class="muted">${esc(f.status)} · +${esc(f.added_lines)} −${esc(f.removed_lines)}</span></h3>${diffBlock(f.diff || "")}`).join("");
  return `<section class="card" id="change"><h2>Change against the parent
      <span class="muted">job <a href="#/jobs/${esc(c.parent_job_id)}">#${esc(c.parent_job_id)}</a> ${esc(c.parent_name || "")}</span></h2>
    <p id="change-summary">${esc(c.summary || "")}</p>
    ${items.length ? `<ul class="change-settings">${items.join("")}</ul>` : ""}${files}</section>`;
}

function findClocks(evs: Json[], v: Json): Json | null {
  for (const e of [...evs].reverse()) if (e.data?.clocks) return e.data.clocks;
  return v?.metrics?.clocks ?? null;
}

/** A profiler's value in its unit: "62.4 µs" (ns), "183 MB" (byte), "42.6%", "1.50 GHz" (hz). */
export function profileValue(v: unknown, unit: string): string {
  if (typeof v !== "number" || !Number.isFinite(v)) return "—";
  const sig3 = (x: number): string => (x === 0 ? "0" : x.toFixed(Math.max(0, 2 - Math.floor(Math.log10(Math.abs(x))))));
  const scaled = (x: number, u: string): string => {
    const p = ["", "K", "M", "G", "T", "P"];
    let i = 0;
    while (i + 1 < p.length && Math.abs(x) >= 1000) { x /= 1000; i++; }
    return `${sig3(x)} ${p[i]}${u}`;
  };
  const u = (unit || "").toLowerCase();
  if (u === "ns" || u === "nsecond") return v < 1000 ? `${v.toFixed(0)} ns` : v < 1e6 ? `${(v / 1e3).toFixed(1)} µs` : `${(v / 1e6).toFixed(2)} ms`;
  if (u === "%") return `${v.toFixed(1)}%`;
  if (u === "byte") return scaled(v, "B");
  if (u === "hz") return scaled(v, "Hz");
  return (Number.isInteger(v) ? v.toLocaleString("en-US") : sig3(v)) + (unit ? ` ${unit}` : "");
}

/** The profile stage's data: medians per kernel and metric, the profiler's advice, or why there is none. */
function profileCard(p: Json): string {
  if (!p) return "";
  const rows: string[][] = [];
  for (const k of p.summary || []) {
    for (const [m, s] of Object.entries(k.metrics || {}) as [string, Json][]) {
      rows.push([esc(k.name || k.kernel), esc(m), `<span class="num">${esc(profileValue(s.median, s.unit))}</span>`,
        esc(profileValue(s.min, s.unit)), esc(profileValue(s.max, s.unit)), esc(s.n ?? "")]);
    }
  }
  // The simulated backend sends {metrics: {name: value}}.
  if (!p.summary && p.metrics && !Array.isArray(p.metrics)) {
    for (const [m, v] of Object.entries(p.metrics)) rows.push(["—", esc(m), esc(profileValue(v, "")), "", "", ""]);
  }
  const advice = (p.advice || []).map((a: Json) => `<li><b>${esc(a.rule)}</b> ${esc(a.description)}</li>`).join("");
  const note = p.note ? `<p class="state-reason">${esc(p.note)}</p>` : "";
  const clocks = p.clock_note ? `<p class="muted">${esc(p.clock_note)}</p>` : "";
  return `<section class="card" id="profile"><h2>Profile <span class="muted">${esc(p.tool || "")}${p.launches !== undefined ? ` · ${esc(p.launches)} launches` : ""}</span></h2>
    ${note}${rows.length || !note ? table(["Kernel", "Metric", "Median", "Min", "Max", "n"], rows, "No metric values.") : ""}
    ${advice ? `<ul>${advice}</ul>` : ""}${clocks}</section>`;
}

function eventDetail(e: Json): string {
  const d = { ...(e.data || {}) };
  if (Array.isArray(d.samples_us)) d.samples_us = `[${d.samples_us.length} samples]`;
  if (e.type === "log") return esc(`[${d.stage ?? ""}] ${d.text ?? ""}`);
  const s = JSON.stringify(d);
  return esc(s.length > 220 ? s.slice(0, 220) + "…" : s);
}

/** Mounts the page of job `id` into `el`; returns its teardown. */
export function mountJob(el: HTMLElement, id: number): () => void {
  let chart: Chart | null = null;
  const refresh = async (): Promise<void> => {
    let detail: Json, events: Json;
    try {
      [detail, events] = await Promise.all([getJson(`/api/v1/jobs/${id}`),
        getJson(`/api/v1/jobs/${id}/events?limit=10000`)]);
    } catch (err) {
      if (err instanceof HttpError && err.status === 404) {
        el.innerHTML = `<h1>Job #${id}</h1><p class="empty">There is no job #${id}. See the <a href="#/">queue</a>.</p>`;
      } else showError(el, err);
      return;
    }
    const job = detail.job;
    const runs: Json[] = detail.runs || [];
    const evs: Json[] = events.events || [];
    const run = runs.reduce((a: Json, r: Json) => (!a || r.id > a.id ? r : a), null);
    const runEvs = run ? evs.filter((e) => e.run_id === run.id) : [];
    const last = (type: string): Json => [...runEvs].reverse().find((e) => e.type === type)?.data;

    const budget = job.spec?.gates?.resources || {};
    // A compile agent's run has the resources report; the GPU agent's run that follows has
    // none: take the newest report of any run.
    const resEv = [...evs].reverse().find((e) => e.type === "resources");
    const res = resEv?.data;
    const amd = (k: Json) => k.vgprs !== undefined && k.registers === undefined;
    const resRows = (res?.kernels || []).map((k: Json) => [esc(k.name),
      amd(k) ? `${budgetCell(k.vgprs, budget.max_vgprs)} VGPR · ${budgetCell(k.sgprs, budget.max_sgprs)} SGPR`
             : budgetCell(k.registers, budget.max_registers),
      amd(k) ? budgetCell(k.lds_bytes, budget.max_lds_bytes) : budgetCell(k.shared_bytes, budget.max_shared_bytes),
      amd(k) ? budgetCell(k.scratch_bytes, budget.max_scratch_bytes) : budgetCell(k.spill_bytes, budget.max_spill_bytes),
      okMark(res.ok)]);
    const violations = (res?.violations || []).map((v: Json) =>
      `<li class="bad">${esc(typeof v === "string" ? v : v.reason ?? JSON.stringify(v))}</li>`).join("");
    // Which agent ran each stage (kfleetd names it on the stage events).
    const stageAgents = new Map<string, string>();
    for (const e of evs)
      if (e.type === "stage.started" && e.data?.agent) stageAgents.set(e.data.stage, e.data.agent);
    const builtBy = stageAgents.get("build");
    const ranBy = stageAgents.get("benchmark") ?? stageAgents.get("correctness");

    const corr = runEvs.filter((e) => e.type === "correctness").map((e) => e.data);
    const tol = job.spec?.gates?.correctness?.tolerance?.max_abs;
    const corrRows = corr.map((c: Json) => [esc(c.case), String(c.seed ?? ""),
      `<span class="num">${num(c.max_abs, 4)}</span>`, num(c.max_rel, 4), num(c.rel_l2, 5), okMark(c.ok)]);
    const corrPassed = corr.filter((c: Json) => c.ok).length;

    const bench = last("bench.result");
    const samples: number[] = last("bench.samples")?.samples_us ?? bench?.samples_us ?? [];
    const clocks = findClocks(runEvs, job.verdict);
    const clockRows = clocks ? Object.entries(clocks).map(([k, v]) => `<div>${esc(k)}</div><div>${esc(typeof v === "object" ? JSON.stringify(v) : v)}</div>`).join("") : "";
    const logRows = evs.slice(-300).map((e) => [String(e.id), e.run_id ? String(e.run_id) : "—",
      esc((e.ts || "").replace("T", " ").replace("Z", "")), esc(e.type), eventDetail(e)]);
    const anySim = job.simulated || runs.some((r) => r.simulated);

    el.innerHTML = `
      <h1>Job #${job.id}: <span id="job-name">${esc(job.name)}</span>${simBadge(job.simulated)} ${stateBadge(job.state)}</h1>
      ${simBanner(anySim)}
      <p class="muted">${job.campaign ? `campaign <a href="#/campaigns/${encodeURIComponent(job.campaign)}">${esc(job.campaign)}</a> · ` : ""}
        ${job.parent ? `parent ${esc(job.parent)} · ` : ""}GPU ${esc(job.gpu)} · attempt ${job.attempts ?? 0}/${job.max_attempts ?? "?"}
        · submitted ${ago(job.created)}${job.submitted_by ? ` <span id="submitted-by">by ${esc(job.submitted_by)}</span>` : ""}
        ${job.cancelled_by ? ` · <span id="cancelled-by">cancelled by ${esc(job.cancelled_by)}</span>` : ""}${job.state_reason ? ` · <span class="state-reason">${esc(firstLine(job.state_reason))}</span>` : ""}
        ${run ? ` · run ${run.id} (${esc(run.stage || run.outcome)})${simBadge(run.simulated)}` : ""}</p>
      ${verdictLine(job.verdict, job.state)}
      ${versusCard(job.verdict?.versus)}
      ${kernelsCard(job.verdict?.metrics?.kernels)}
      ${changeCard(job.change)}
      <div class="grid2">
        <section class="card" id="resources"><h2>Gate 1 · Resources
          ${builtBy ? `<span class="muted" id="built-by">built on ${esc(builtBy)}${resEv?.data?.simulated ? "" : " (real compiler)"}</span>` : ""}</h2>
          ${table(["Kernel", "Registers", "Shared / LDS bytes", "Spill / scratch bytes", ""], resRows, "No resource report yet.")}
          ${violations ? `<ul>${violations}</ul>` : ""}</section>
        <section class="card" id="correctness"><h2>Gate 2 · Correctness
          ${ranBy && ranBy !== builtBy ? `<span class="muted" id="ran-by">on ${esc(ranBy)}</span>` : ""}
          ${corr.length ? `<span class="muted">${corrPassed}/${corr.length} pass${tol !== undefined ? `, max_abs ≤ ${esc(tol)}` : ""}</span>` : ""}</h2>
          ${table(["Case", "Seed", "max_abs", "max_rel", "rel_l2", ""], corrRows, "No correctness results yet.")}</section>
      </div>
      <section class="card" id="performance"><h2>Gate 3 · Performance
        ${bench ? `<span class="muted">${esc(bench.case || "")} · n=${esc(bench.n)} · median ${num(bench.median_us)} µs · p10 ${num(bench.p10_us)} · p90 ${num(bench.p90_us)} · noise ${num(bench.noise_pct, 2)}%</span>` : ""}</h2>
        ${samples.length ? `<div class="chart-box"><canvas id="timing-chart" aria-label="timing distribution"></canvas></div>`
                         : `<p class="empty">No timing samples yet.</p>`}</section>
      ${clocks ? `<section class="card" id="clocks"><h2>Clocks</h2><div class="kv">${clockRows}</div></section>` : ""}
      ${profileCard(last("profile"))}
      <section class="card" id="event-log"><h2>Events (${evs.length})</h2>
        ${table(["#", "Run", "Time", "Type", "Data"], logRows, "No events yet.", "log")}</section>`;

    chart?.destroy();
    chart = null;
    const canvas = el.querySelector<HTMLCanvasElement>("#timing-chart");
    if (canvas) {
      const h = histogram(samples);
      chart = new Chart(canvas, {
        type: "bar",
        data: { labels: h.labels, datasets: [{ label: `samples (µs), n=${samples.length}`, data: h.counts,
          backgroundColor: job.verdict?.outcome === "rejected" ? "#f87171" : "#60a5fa" }] },
        options: { animation: false, responsive: true, maintainAspectRatio: false,
          scales: { x: { title: { display: true, text: "kernel time (µs)" } },
                    y: { title: { display: true, text: "samples" }, beginAtZero: true } } },
      });
      canvas.dataset.drawn = "1";
    }
  };
  const stop = keepFresh(refresh, (e) => e.job_id === id, 300);
  return () => { stop(); chart?.destroy(); };
}
