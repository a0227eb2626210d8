// The kfleetd API as the dashboards use it (orchestrator/api/openapi.yaml), plus the live feed.

export type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export class HttpError extends Error {
  constructor(public status: number, message: string) { super(message); }
}

// The API token the user signed in with. It lives in sessionStorage: it stays for this tab's
// session and goes when the tab closes; it is never put in a URL or in localStorage.
const TOKEN_KEY = "kfleet.token";
export function token(): string | null { return sessionStorage.getItem(TOKEN_KEY); }
export function setToken(t: string | null): void {
  if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
}
/** Headers with the token, when there is one. */
export function authHeaders(extra: Record<string, string> = {}): Record<string, string> {
  const t = token();
  return t ? { ...extra, Authorization: `Bearer ${t}` } : extra;
}
/** Called when kfleetd refuses the token (revoked, or none yet): main.ts shows the sign-in. */
let onSignedOut: () => void = () => {};
export function whenSignedOut(f: () => void): void { onSignedOut = f; }

/** GETs a JSON document from kfleetd; a non-2xx answer becomes an HttpError with its message. */
export async function getJson(path: string): Promise<Json> {
  const res = await fetch(path, { headers: authHeaders({ Accept: "application/json" }) });
  if (res.status === 401) { setToken(null); onSignedOut(); }
  const text = await res.text();
  let body: Json = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (!res.ok) {
    const msg = body?.error?.message ?? `${res.status} ${res.statusText}`;
    throw new HttpError(res.status, `${path}: ${msg}`);
  }
  return body;
}

export interface FeedEvent {
  id: number; job_id: number; run_id: number; seq: number; ts?: string; ts_ms?: number;
  type: string; data: Json;
}

type Listener = (e: FeedEvent) => void;
type StatusListener = (state: "connecting" | "live" | "down") => void;

/**
 * Follows GET /api/v1/events as Server-Sent Events for as long as the page lives, resuming
 * after the last id it saw when the connection drops. It reads the stream with fetch instead
 * of EventSource because kfleetd names each SSE event by its type, and EventSource can only
 * listen to names it knows in advance.
 */
export class LiveFeed {
  private listeners = new Set<Listener>();
  private statusListeners = new Set<StatusListener>();
  lastId = 0;
  recent: FeedEvent[] = [];

  on(l: Listener): () => void { this.listeners.add(l); return () => this.listeners.delete(l); }
  onStatus(l: StatusListener): void { this.statusListeners.add(l); }

  private started = false;
  start(): void {
    if (this.started) return;
    this.started = true;
    void this.findTail().then(() => this.loop());
  }

  /**
   * Starts the feed near the newest event instead of replaying a long-lived store's whole
   * history: a doubling then bisecting search over `after` (about 2·log2(N) tiny requests)
   * finds the last id, and the feed begins a little before it so "recent" has context.
   */
  private async findTail(): Promise<void> {
    const firstAfter = async (after: number): Promise<number> => {
      const page = await getJson(`/api/v1/events?after=${after}&limit=1`);
      return page?.events?.[0]?.id ?? 0;
    };
    try {
      if (!(await firstAfter(0))) return;
      let lo = 0;   // some event lies after lo
      let hi = 1;   // grows until nothing lies after it
      while (await firstAfter(hi)) { lo = hi; hi *= 2; }
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (await firstAfter(mid)) lo = mid; else hi = mid;
      }
      const last = await firstAfter(lo);
      this.lastId = Math.max(0, last - 30);
      document.body.dataset.feedFrom = String(this.lastId); // where the feed began, for tests
    } catch {
      this.lastId = 0; // the stream's own retry loop reports a kfleetd that is down
    }
  }

  private setStatus(s: "connecting" | "live" | "down"): void {
    for (const l of this.statusListeners) l(s);
  }

  private async loop(): Promise<void> {
    let backoff = 500;
    for (;;) {
      try {
        this.setStatus("connecting");
        const res = await fetch(`/api/v1/events?after=${this.lastId}`, {
          headers: authHeaders({ Accept: "text/event-stream" }), cache: "no-store",
        });
        if (res.status === 401) { setToken(null); onSignedOut(); return; }
        if (!res.ok || !res.body) throw new Error(`feed: ${res.status}`);
        this.setStatus("live");
        backoff = 500;
        await this.read(res.body);
      } catch {
        // fall through to the reconnect below
      }
      this.setStatus("down");
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 8000);
    }
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let cut: number;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        this.frame(frame);
      }
    }
  }

  private frame(frame: string): void {
    let data = "";
    let id = 0;
    for (const line of frame.split("\n")) {
      if (line.startsWith("data:")) data += line.slice(5).trim();
      else if (line.startsWith("id:")) id = Number(line.slice(3).trim());
    }
    if (!data || !id) return; // keep-alives and the end marker carry no event
    let ev: FeedEvent;
    try { ev = JSON.parse(data); } catch { return; }
    this.lastId = Math.max(this.lastId, id);
    this.recent.push(ev);
    if (this.recent.length > 200) this.recent.splice(0, this.recent.length - 200);
    for (const l of this.listeners) l(ev);
  }
}

export const feed = new LiveFeed();
