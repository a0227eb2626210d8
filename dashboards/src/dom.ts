// Small DOM helpers: everything the pages render goes through esc() or text nodes, because
// job names, reasons and log lines come from users and must never be parsed as HTML.

/** Escapes text for safe interpolation into HTML. */
export function esc(v: unknown): string {
  return String(v ?? "").replace(/[&<>"']/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}

/** The violet mark every simulated job, run, verdict and agent carries. */
export function simBadge(simulated: unknown): string {
  return simulated ? ` <span class="badge sim" title="numbers come from the simulated backend, not a GPU">SIMULATED</span>` : "";
}

/** The marks a verdict carries when its numbers are not the harness's own measurement in the
 *  sandbox: a custom job's self-reported numbers, an agent run without the job sandbox. */
export function trustBadges(v: { self_reported?: unknown; unsandboxed?: unknown } | undefined): string {
  if (!v) return "";
  return (v.self_reported ? ` <span class="badge self-reported" title="a custom job's own scripts timed themselves: not a harness measurement">SELF-REPORTED</span>` : "") +
    (v.unsandboxed ? ` <span class="badge unsandboxed" title="the agent ran this job's code without the job sandbox">UNSANDBOXED</span>` : "");
}

/** A state word coloured by its meaning (passed green, rejected red, running blue...). */
export function stateBadge(state: string | undefined): string {
  const s = state || "unknown";
  return `<span class="badge state-${esc(s)}" data-state="${esc(s)}">${esc(s)}</span>`;
}

/** "1.2 s ago" style age of an ISO time relative to now. */
export function ago(iso: string | undefined, now = Date.now()): string {
  if (!iso) return "—";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return esc(iso);
  return duration((now - t) / 1000) + " ago";
}

/** Seconds as "45 s", "3 min 05 s", "2 h 10 min". */
export function duration(sec: number): string {
  if (!Number.isFinite(sec)) return "—";
  const s = Math.max(0, Math.round(sec));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** A number with a fixed count of decimals, or a dash when absent. */
export function num(v: unknown, digits = 1): string {
  return typeof v === "number" && Number.isFinite(v) ? v.toFixed(digits) : "—";
}

/** A signed percentage like "+6.1%". */
export function pct(v: unknown, digits = 1): string {
  if (typeof v !== "number" || !Number.isFinite(v)) return "—";
  return (v > 0 ? "+" : "") + v.toFixed(digits) + "%";
}

export function jobLink(id: number | undefined, label?: string): string {
  if (!id) return "—";
  return `<a href="#/jobs/${id}">${esc(label ?? "#" + id)}</a>`;
}

/** A table from rows, or a line saying there is nothing to show. */
export function table(headers: string[], rows: string[][], emptyText: string, cls = ""): string {
  if (rows.length === 0) return `<p class="empty">${esc(emptyText)}</p>`;
  const head = headers.map((h) => `<th>${h}</th>`).join("");
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join("")}</tr>`).join("");
  // Wide tables scroll inside their wrapper, so a phone-width page never scrolls sideways.
  return `<div class="table-wrap"><table class="${cls}"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></div>`;
}

/** The banner a page shows when any of what it renders is simulated. */
export function simBanner(any: boolean): string {
  return any
    ? `<div class="sim-banner"><span class="badge sim">SIMULATED</span> Some results on this page come from the simulated backend: their timings are not GPU measurements.</div>`
    : "";
}
