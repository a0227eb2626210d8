// The single-page app: hash routes pick a page; each page draws itself into <main> and keeps
// itself current from the live event feed until the route changes.
import { feed, getJson, setToken, token, whenSignedOut } from "./api";
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
/**
 * Every API call needs a token: the page asks for one, checks it with /api/v1/whoami, and keeps
 * it in sessionStorage for this tab. A refused token (revoked) brings the form back.
 */
function showSignIn(message = ""): void {
  if (current) current();
  current = null;
  const who = document.getElementById("who");
  if (who) who.textContent = "";
  const el = document.getElementById("app") as HTMLElement;
  el.innerHTML = `<h1>Sign in</h1>
    <p>kfleetd needs an API token for every page. Ask an admin for one
    (<code>kfleet token create --user you --scope read</code>); it stays in this tab only.</p>
    <form id="login" autocomplete="off">
      <input id="login-token" type="password" placeholder="kft_…" size="48" aria-label="API token">
      <button type="submit">Sign in</button>
    </form>
    <p id="login-error" class="error">${esc(message)}</p>`;
  const form = document.getElementById("login") as HTMLFormElement;
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const input = document.getElementById("login-token") as HTMLInputElement;
    setToken(input.value.trim());
    void signIn();
  });
}

async function signIn(): Promise<void> {
  if (!token()) { showSignIn(); return; }
  try {
    const me = await getJson("/api/v1/whoami");
    const who = document.getElementById("who");
    if (who) {
      who.innerHTML = `${esc(me.user)} (${esc(me.scope)}) <a href="#" id="sign-out">sign out</a>`;
      document.getElementById("sign-out")?.addEventListener("click", (e) => {
        e.preventDefault();
        setToken(null);
        location.reload();
      });
    }
    document.body.dataset.user = me.user;
    feed.start();
    route();
  } catch (err) {
    setToken(null);
    showSignIn(`kfleetd refused the token: ${(err as Error).message}`);
  }
}

whenSignedOut(() => showSignIn("kfleetd refused the token (revoked?): sign in again"));
window.addEventListener("hashchange", () => { if (token()) route(); });
void signIn();
