// Regression matrices: kernel × GPU class cells with delta, CI and verdict. The endpoint may
// not exist on an older kfleetd; a 404 reads the same as "none yet".
import { getJson, HttpError, Json } from "../api";
import { esc, fastPCard, jobLink, pct, simBadge, simBanner, stateBadge, table, versusCell } from "../dom";
import { keepFresh, showError } from "../live";

const NONE = `<section class="card" id="no-regressions"><p class="empty">No regression runs yet.</p>
  <p class="muted">A regression run measures every kernel of a suite on every GPU class against its baseline.</p></section>`;

/** Mounts the list of regression runs into `el`; returns its teardown. */
export function mountRegressionList(el: HTMLElement): () => void {
  const refresh = async (): Promise<void> => {
    let body: Json;
    try { body = await getJson("/api/v1/regressions"); } catch (err) {
      if (err instanceof HttpError && err.status === 404) { el.innerHTML = `<h1>Regressions</h1>${NONE}`; return; }
      showError(el, err); return;
    }
    const list: Json[] = body?.regressions ?? [];
    if (list.length === 0) { el.innerHTML = `<h1>Regressions</h1>${NONE}`; return; }
    const rows = list.map((r) => [`<a href="#/regressions/${encodeURIComponent(r.id)}">#${esc(r.id)}</a>`,
      esc(r.suite), stateBadge(r.state), esc(r.created), String((r.cells || []).length || r.cell_count || "")]);
    el.innerHTML = `<h1>Regressions</h1><section class="card">${table(["Run", "Suite", "State", "Created", "Cells"], rows, "")}</section>`;
  };
  return keepFresh(refresh, (e) => e.type === "verdict", 1000, 15000);
}

/** Mounts regression matrix `id` into `el`; returns its teardown. */
export function mountRegression(el: HTMLElement, id: string): () => void {
  const refresh = async (): Promise<void> => {
    let body: Json;
    try { body = await getJson(`/api/v1/regressions/${encodeURIComponent(id)}`); } catch (err) {
      if (err instanceof HttpError && err.status === 404) { el.innerHTML = `<h1>Regression #${esc(id)}</h1>${NONE}`; return; }
      showError(el, err); return;
    }
    const reg = body?.regression;
    const cells: Json[] = reg?.cells ?? [];
    if (!reg || cells.length === 0) { el.innerHTML = `<h1>Regression #${esc(id)}</h1>${NONE}`; return; }
    const kernels = [...new Set(cells.map((c) => c.kernel))].sort();
    const classes = [...new Set(cells.map((c) => c.gpu_class))].sort();
    const at = new Map(cells.map((c) => [`${c.kernel}\u0000${c.gpu_class}`, c]));
    const rows = kernels.map((k) => [esc(k), ...classes.map((g) => {
      const c = at.get(`${k}\u0000${g}`);
      if (!c) return `<span class="muted">—</span>`;
      return `<div class="cell cell-${esc(c.verdict)}" data-kernel="${esc(k)}" data-gpu="${esc(g)}">
        <b>${pct(c.delta_pct)}</b> <span class="muted">[${pct(c.ci_low_pct)}, ${pct(c.ci_high_pct)}]</span><br>
        ${esc(c.verdict)} · ${jobLink(c.job_id)}${simBadge(c.simulated)}
        ${c.versus ? `<br><span class="muted">vs PyTorch</span> ${versusCell(c.versus)}` : ""}</div>`;
    })]);
    el.innerHTML = `<h1>Regression #${esc(reg.id)}: ${esc(reg.suite)} ${stateBadge(reg.state)}</h1>
      ${simBanner(cells.some((c) => c.simulated))}<p class="muted">created ${esc(reg.created)}</p>
      <section class="card" id="matrix">${table(["Kernel", ...classes.map(esc)], rows, "")}</section>
      ${fastPCard(reg.fast_p, cells.flatMap((c) => c.versus ?? []))}`;
  };
  return keepFresh(refresh, (e) => e.type === "verdict", 1000, 15000);
}
