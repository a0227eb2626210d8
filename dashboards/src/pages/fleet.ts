// Fleet: agents by region and GPU class, and the regions the provisioner may not use right now.
import { getJson, Json } from "../api";
import { ago, duration, esc, jobLink, simBadge, simBanner, stateBadge, table } from "../dom";
import { keepFresh, showError } from "../live";

function gpuClass(a: Json): string {
  const classes = [...new Set((a.gpus || []).map((g: Json) => g.gpu_class).filter(Boolean))];
  return classes.length ? classes.join(" + ") : "unknown GPU";
}

/** Mounts the fleet page into `el`; returns its teardown. */
export function mountFleet(el: HTMLElement): () => void {
  // Blocks count down between fetches: each remembers when its seconds_left was read.
  let blocks: { b: Json; readAt: number }[] = [];

  const tick = (): void => {
    for (const node of el.querySelectorAll<HTMLElement>("[data-block]")) {
      const blk = blocks[Number(node.dataset.block)];
      if (!blk) continue;
      const left = (blk.b.seconds_left ?? 0) - (Date.now() - blk.readAt) / 1000;
      node.textContent = left > 0 ? duration(left) : "expiring";
    }
  };

  const refresh = async (): Promise<void> => {
    let fleet: Json;
    try { fleet = await getJson("/api/v1/agents?limit=1000"); } catch (err) { showError(el, err); return; }
    const agents: Json[] = (fleet.agents || []).filter((a: Json) => a.state !== "retired");
    blocks = (fleet.blocks || []).map((b: Json) => ({ b, readAt: Date.now() }));

    const groups = new Map<string, Map<string, Json[]>>();
    for (const a of agents) {
      const byClass = groups.get(a.region || "unknown") ?? new Map<string, Json[]>();
      groups.set(a.region || "unknown", byClass);
      const k = gpuClass(a);
      byClass.set(k, [...(byClass.get(k) ?? []), a]);
    }
    const counts = { idle: 0, busy: 0, lost: 0 } as Record<string, number>;
    for (const a of agents) counts[a.state] = (counts[a.state] ?? 0) + 1;

    const regionHtml = [...groups.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([region, byClass]) => {
      const parts = [...byClass.entries()].map(([cls, list]) => {
        const rows = list.map((a) => [
          `<span class="agent-name">${esc(a.name)}</span>${simBadge(a.simulated)}`, stateBadge(a.state),
          a.current_run_id ? `run ${a.current_run_id}` : "—",
          esc((a.gpus || []).map((g: Json) => `${g.name || g.gpu_class} (${g.arch || "?"})`).join(", ")),
          esc(a.backend), esc(a.provider || "static"), ago(a.last_seen),
        ]);
        return `<h3>${esc(cls)} <span class="muted">· ${list.length} agent${list.length === 1 ? "" : "s"}</span></h3>
          ${table(["Agent", "State", "Current run", "GPUs", "Backend", "Provider", "Last seen"], rows, "")}`;
      }).join("");
      return `<section class="card region" data-region="${esc(region)}"><h2>${esc(region)}</h2>${parts}</section>`;
    }).join("");

    const blockRows = blocks.map(({ b }, i) => [
      esc(b.region), esc(b.gpu_class || "any"), esc(b.provider || ""),
      `<span class="badge state-error">${esc(b.kind)}</span>`, esc(b.reason), String(b.strikes ?? ""),
      `<span data-block="${i}">${duration(b.seconds_left ?? 0)}</span>`,
    ]);
    el.innerHTML = `
      <h1>Fleet</h1>${simBanner(agents.some((a) => a.simulated))}
      <p class="muted">${agents.length} agents: ${counts.idle} idle, ${counts.busy} busy, ${counts.lost} lost</p>
      ${regionHtml || `<section class="card"><p class="empty">No agents have enrolled yet.</p></section>`}
      <section class="card" id="blocks"><h2>Blocked regions</h2>
        ${table(["Region", "GPU class", "Provider", "Kind", "Reason", "Strikes", "Time left"], blockRows,
                 "No region is blocked.")}</section>`;
    tick();
  };
  const stop = keepFresh(refresh, (e) => e.type.startsWith("lease") || e.type === "job.state" ||
                                         e.type === "capacity", 250, 5000);
  const ticker = setInterval(tick, 1000);
  return () => { stop(); clearInterval(ticker); };
}
