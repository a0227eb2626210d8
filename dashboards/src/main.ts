// The single-page app: hash routes pick a page; each page draws itself into <main> and keeps
// itself current from the live event feed until the route changes.
import { feed } from "./api";
import { esc } from "./dom";
import { mountQueue } from "./pages/queue";
import { mountFleet } from "./pages/fleet";
import { mountJob } from "./pages/job";
import { mountCampaign, mountCampaignList } from "./pages/campaign";
import { mountRegression, mountRegressionList } from "./pages/regressions";

/** A mounted page; calling it tears the page down (timers, feed listeners, charts). */
export type Unmount = () => void;

interface Route { re: RegExp; nav: string; mount: (el: HTMLElement, m: string[]) => Unmount }

const routes: Route[] = [
  { re: /^#?\/?$/, nav: "queue", mount: (el) => mountQueue(el) },
  { re: /^#\/queue$/, nav: "queue", mount: (el) => mountQueue(el) },
  { re: /^#\/fleet$/, nav: "fleet", mount: (el) => mountFleet(el) },
  { re: /^#\/jobs\/(\d+)$/, nav: "queue", mount: (el, m) => mountJob(el, Number(m[1])) },
  { re: /^#\/campaigns$/, nav: "campaigns", mount: (el) => mountCampaignList(el) },
  { re: /^#\/campaigns\/(.+)$/, nav: "campaigns", mount: (el, m) => mountCampaign(el, decodeURIComponent(m[1])) },
  { re: /^#\/regressions$/, nav: "regressions", mount: (el) => mountRegressionList(el) },
  { re: /^#\/regressions\/(.+)$/, nav: "regressions", mount: (el, m) => mountRegression(el, decodeURIComponent(m[1])) },
];

let current: Unmount | null = null;

function route(): void {
  const el = document.getElementById("app") as HTMLElement;
  if (current) current();
  current = null;
  const hash = location.hash || "#/";
  for (const r of routes) {
    const m = hash.match(r.re);
    if (!m) continue;
    for (const a of document.querySelectorAll<HTMLAnchorElement>("nav a")) {
      a.classList.toggle("active", a.dataset.nav === r.nav);
    }
    el.innerHTML = `<p class="muted">loading…</p>`;
    current = r.mount(el, m);
    return;
  }
  el.innerHTML = `<h1>Not found</h1><p>No page at <code>${esc(hash)}</code>. Try the <a href="#/">queue</a>.</p>`;
}

const status = document.getElementById("feed-status");
feed.onStatus((s) => {
  if (!status) return;
  status.dataset.state = s;
  status.textContent = s === "live" ? "live" : s === "down" ? "feed: reconnecting" : "feed: connecting";
});
feed.start();
window.addEventListener("hashchange", route);
route();
