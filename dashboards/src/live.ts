// Keeping a page current: refetch when a relevant event arrives, coalescing bursts so a run
// that emits dozens of events in a second costs one refetch, not dozens.
import { feed, FeedEvent } from "./api";

/**
 * Calls `refresh` now and again after every relevant feed event (at most once per `delayMs`),
 * plus every `pollMs` as a fallback for changes that emit no event (agents' last seen).
 * Returns the function that stops it.
 */
export function keepFresh(refresh: () => Promise<void>, relevant: (e: FeedEvent) => boolean,
                          delayMs = 250, pollMs = 0): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let running = false;
  let again = false;

  const run = async (): Promise<void> => {
    if (stopped) return;
    if (running) { again = true; return; }
    running = true;
    try { await refresh(); } catch (err) { console.error(err); }
    running = false;
    if (again && !stopped) { again = false; schedule(); }
  };
  const schedule = (): void => {
    if (timer || stopped) return;
    timer = setTimeout(() => { timer = null; void run(); }, delayMs);
  };
  const off = feed.on((e) => { if (relevant(e)) schedule(); });
  const poll = pollMs > 0 ? setInterval(schedule, pollMs) : null;
  void run();
  return () => {
    stopped = true;
    off();
    if (timer) clearTimeout(timer);
    if (poll) clearInterval(poll);
  };
}

/** Renders an error in place of a page's content, saying what failed. */
export function showError(el: HTMLElement, err: unknown): void {
  const msg = err instanceof Error ? err.message : String(err);
  el.innerHTML = `<section class="card bad">Could not load this page: ${msg.replace(/</g, "&lt;")}.
    Is kfleetd reachable? The page retries when new events arrive.</section>`;
}
