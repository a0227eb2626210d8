// Bundles the dashboards into one folder (index.html + assets/) so kfleetd can serve them offline:
// every dependency, chart.js included, ends up in one local script; nothing loads from a CDN.
// The folder is the build's, never the source tree's:
//   node build.mjs --out DIR     (the CMake target passes <build>/dashboards/dist)
//   node build.mjs               (by hand: ../build/dashboards/dist, where a build puts it)
import { build } from "esbuild";
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outAt = process.argv.indexOf("--out");
if (outAt >= 0 && !process.argv[outAt + 1]) throw new Error("--out needs a folder");
const dist = resolve(outAt >= 0 ? process.argv[outAt + 1] : join(here, "..", "build", "dashboards", "dist"));
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
