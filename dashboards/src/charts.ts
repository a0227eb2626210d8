// chart.js, registered piecemeal so the bundle carries only the charts the pages draw.
import {
  BarController, BarElement, CategoryScale, Chart, Filler, Legend, LinearScale, LineController,
  LineElement, PointElement, ScatterController, Tooltip,
} from "chart.js";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement,
  PointElement, ScatterController, Tooltip, Legend, Filler);

export { Chart };

/** Bins samples into equal-width buckets (about 2·√n of them) for a histogram: labels are bucket centres. */
export function histogram(samples: number[], bins = Math.min(30, Math.max(5, Math.ceil(2 * Math.sqrt(samples.length))))): { labels: string[]; counts: number[] } {
  if (samples.length === 0) return { labels: [], counts: [] };
  const lo = Math.min(...samples);
  const hi = Math.max(...samples);
  const width = hi > lo ? (hi - lo) / bins : 1;
  const n = hi > lo ? bins : 1;
  const counts = new Array(n).fill(0);
  for (const s of samples) counts[Math.min(n - 1, Math.floor((s - lo) / width))]++;
  const labels = counts.map((_, i) => (lo + (i + 0.5) * width).toFixed(1));
  return { labels, counts };
}
