// Bundles the dashboards into dist/ (index.html + assets/) so kfleetd can serve them offline:
// every dependency, chart.js included, ends up in one local script; nothing loads from a CDN.
import { build } from "esbuild";
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
rmSync(dist, { recursive: true, force: true });
mkdirSync(join(dist, "assets"), { recursive: true });

await build({
  entryPoints: [join(here, "src", "main.ts")],
  bundle: true,
  minify: true,
  sourcemap: false,
  format: "esm",
  target: ["es2020"],
  outfile: join(dist, "assets", "app.js"),
  logLevel: "warning",
});
cpSync(join(here, "src", "index.html"), join(dist, "index.html"));
cpSync(join(here, "src", "style.css"), join(dist, "assets", "style.css"));
console.log("dashboards built into", dist);
