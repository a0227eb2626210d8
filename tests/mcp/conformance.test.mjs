// The official MCP conformance suite (@modelcontextprotocol/conformance, server scenarios)
// against `kfleet mcp`. The suite tests servers by URL only (Streamable HTTP), so
// http_bridge.mjs serves `kfleet mcp` there, passing messages through unchanged. Scenarios
// kfleet does not pass are listed, with reasons, in conformance-expected-failures.yaml (and
// docs/mcp.md): the run fails on any other failure, and on a listed one that starts passing.
//
// Usage: node tests/mcp/conformance.test.mjs --cli BIN
import { spawn } from "node:child_process";
import { createWriteStream, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startBridge } from "./http_bridge.mjs";

const here = dirname(fileURLToPath(import.meta.url));

async function main() {
  const argv = process.argv.slice(2);
  const cli = argv[0] === "--cli" ? argv[1] : undefined;
  if (!cli || !existsSync(cli)) throw new Error(`--cli must name the built kfleet (got '${cli ?? ""}')`);
  const require = createRequire(join(here, "package.json"));
  const pkg = require.resolve("@modelcontextprotocol/conformance/package.json");
  const bin = join(dirname(pkg), "dist", "index.js");
  const tmp = mkdtempSync(join(tmpdir(), "kfleet-mcp-conformance-"));
  const log = createWriteStream(join(tmp, "bridge.log"));
  // Nothing here calls kfleetd (the suite calls its own fixture tools, which kfleet does not
  // have); an unreachable --server makes any tool call an honest "cannot reach kfleetd".
  const bridge = await startBridge({ command: cli, args: ["--server", "http://127.0.0.1:9", "mcp"],
    env: { PATH: process.env.PATH, HOME: tmp, KFLEET_TOKEN: "kft_conformance" } }, log);
  let code = 1;
  try {
    const child = spawn(process.execPath, [bin, "server", "--url", bridge.url, "--expected-failures",
      join(here, "conformance-expected-failures.yaml"), "-o", join(tmp, "results")],
      { cwd: tmp, stdio: ["ignore", "inherit", "inherit"] });
    code = await new Promise((r) => child.on("exit", (c, sig) => r(sig ? 1 : c)));
  } finally {
    await bridge.close();
    await new Promise((r) => log.end(r));
    if (code === 0) rmSync(tmp, { recursive: true, force: true });
    else console.error(`conformance: results and the bridge's log are in ${tmp}`);
  }
  process.exit(code);
}

main().catch((e) => { console.error(`FAIL: ${e.stack || e.message}`); process.exit(1); });
