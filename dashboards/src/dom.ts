// Small DOM helpers: everything the pages render goes through esc() or text nodes, because
// job names, reasons and log lines come from users and must never be parsed as HTML.
import type { Json } from "./api";

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

/** "eager", "torch.compile": the names kfleet's PyTorch references go by. */
export function baselineLabel(b: unknown): string {
  return b === "compile" ? "torch.compile" : String(b ?? "");
}

/** What a reference's timing is cached by, in one line (kfleet/common/versus.hpp's words). */
export function versusKeyText(key: Json | undefined): string {
  if (!key || typeof key !== "object") return "";
  let s = String(key.problem ?? "");
  if (typeof key.version === "number" && key.version > 0) s += `@${key.version}`;
  if (key.case) s += `${s ? " " : ""}case ${key.case}`;
  if (key.gpu_class) s += `${s ? " " : ""}on ${key.gpu_class}`;
  for (const [k, label] of [["torch", "torch"], ["triton", "triton"], ["driver", "driver"], ["measurer", "measurer"]])
    if (key[k]) s += `${s ? ", " : ""}${label} ${key[k]}`;
  return s;
}

/** A comparison's confidence interval, "[1.48, 1.52]", or "" when it has none. */
function intervalText(c: Json): string {
  return typeof c?.ci_low === "number" && typeof c?.ci_high === "number"
    ? `[${c.ci_low.toFixed(2)}, ${c.ci_high.toFixed(2)}]` : "";
}

/** One comparison as text: "1.50x eager [1.48, 1.52]", or "torch.compile not timed (why)". */
export function comparisonText(c: Json): string {
  const label = baselineLabel(c?.baseline);
  if (typeof c?.speedup !== "number") return `${label} not timed${c?.note ? ` (${c.note})` : ""}`;
  const ci = intervalText(c);
  return `${c.speedup.toFixed(2)}x ${label}${ci ? ` ${ci}` : ""}`;
}

/** A verdict's `versus` for a table cell: each speedup with its interval; note and key in its tooltip. */
export function versusCell(versus: Json[] | undefined): string {
  if (!Array.isArray(versus) || versus.length === 0) return `<span class="muted">—</span>`;
  const parts = versus.map((c) => {
    const title = [comparisonText(c), c.cached ? "from the agent's cache" : "timed in this run",
      c.simulated ? "simulated" : "", c.note ?? "", versusKeyText(c.key) ? `cached by: ${versusKeyText(c.key)}` : ""]
      .filter((x) => x).join("\n");
    const ci = intervalText(c) ? ` <span class="ci">${intervalText(c)}</span>` : "";
    const text = typeof c.speedup === "number" ? `${c.speedup.toFixed(2)}x ${esc(c.baseline)}${ci}` : `${esc(c.baseline)} —`;
    const cls = typeof c.speedup !== "number" ? "muted" : c.speedup > 1 ? "faster" : "slower";
    return `<span class="versus ${cls}" data-baseline="${esc(c.baseline)}" title="${esc(title)}">${text}</span>`;
  });
  return parts.join(" · ") + simBadge(versus.some((c) => c?.simulated));
}

/** The first line of a reason: a problem's kernel's reason ends with its comparison with PyTorch,
 *  which tables show in a column of their own. */
export function firstLine(s: unknown): string {
  return String(s ?? "").split("\n")[0];
}

/** The distinct keys the references' timings of a set of comparisons are cached by, one line each. */
export function versusKeys(comparisons: Json[]): string {
  const keys = [...new Set(comparisons.map((c) => `${baselineLabel(c?.baseline)}: ${versusKeyText(c?.key)}`)
    .filter((k) => !k.endsWith(": ")))];
  return keys.map((k) => `<p class="muted versus-key">cached by ${esc(k)}</p>`).join("");
}

/** fast_p (a regression run's or a campaign's): a table of p × reference and what the denominator is;
 *  `comparisons` (the set's) give the keys the references' timings are cached by. */
export function fastPCard(f: Json, comparisons: Json[] = [], id = "fast-p"): string {
  if (!f || !f.kernels) return "";
  const bs: Json[] = f.baselines ?? [];
  const ps: number[] = [...new Set(bs.flatMap((b) => (b.p ?? []).map((x: Json) => x.p)))] as number[];
  const rows = ps.map((p) => [`fast<sub>${esc(p)}</sub>`, ...bs.map((b) => {
    const x = (b.p ?? []).find((y: Json) => y.p === p);
    return x ? `<span class="num" data-baseline="${esc(b.baseline)}" data-p="${esc(p)}">${esc(x.fast)}/${esc(f.kernels)}</span>
      <span class="muted">(${(100 * x.share).toFixed(0)}%)</span>` : "—";
  })]);
  const timed = bs.map((b) => `${esc(b.label)} ${esc(b.timed)} of ${esc(f.kernels)}`).join(", ");
  return `<section class="card" id="${esc(id)}"><h2>Against PyTorch: fast_p${simBadge(f.simulated)}</h2>
    <p class="muted">The share of kernels that are correct and more than p times faster than kfleet's PyTorch
      reference of their problem, timed on the same agent by the same replay. Denominator: ${esc(f.kernels)} ${esc(f.of)};
      with a reference timing: ${timed}.</p>
    ${table(["p", ...bs.map((b) => `vs ${esc(b.label)}`)], rows, "")}${versusKeys(comparisons)}</section>`;
}
