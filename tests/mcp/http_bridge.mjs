// Serves a stdio MCP server (`kfleet mcp`) over Streamable HTTP, one child process per MCP
// session, so that @modelcontextprotocol/conformance (which tests servers by --url only) can
// check it. Messages pass through unchanged, in both directions, using the official SDK's
// transports on each side; progress notifications go back on the stream of the request that
// asked for them.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

/** Starts the bridge on 127.0.0.1:0; returns {url, close()}. `spawnArgs`: {command, args, env}. */
export async function startBridge(spawnArgs, log) {
  const sessions = new Map();
  let port = 0;
  const children = new Set();

  async function newSession() {
    const stdio = new StdioClientTransport({ ...spawnArgs, stderr: "pipe" });
    const progressOwner = new Map();  // progressToken -> request id
    const web = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // A loopback HTTP server must refuse other Host headers (DNS rebinding); stdio has no such risk.
      enableDnsRebindingProtection: true,
      allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`],
      onsessioninitialized: (id) => sessions.set(id, { web, stdio }),
    });
    web.onmessage = (m) => {
      const token = m?.params?._meta?.progressToken;
      if (token !== undefined && m.id !== undefined) progressOwner.set(token, m.id);
      stdio.send(m).catch((e) => log.write(`[bridge] to kfleet mcp: ${e.message}\n`));
    };
    stdio.onmessage = (m) => {
      const opts = {};
      if (m.method === "notifications/progress") opts.relatedRequestId = progressOwner.get(m.params?.progressToken);
      web.send(m, opts).catch((e) => log.write(`[bridge] to the client: ${e.message}\n`));
    };
    web.onclose = () => { if (web.sessionId) sessions.delete(web.sessionId); stdio.close(); };
    await stdio.start();
    stdio.stderr?.on("data", (d) => log.write(`[kfleet mcp] ${d}`));
    children.add(stdio);
    await web.start();
    return web;
  }

  const server = http.createServer(async (req, res) => {
    try {
      let body;
      if (req.method === "POST") {
        const chunks = [];
        for await (const c of req) chunks.push(c);
        body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "null");
      }
      const sid = req.headers["mcp-session-id"];
      let web = sid ? sessions.get(sid)?.web : undefined;
      if (!web) {
        if (!sid && req.method === "POST" && isInitializeRequest(body)) web = await newSession();
        else {
          res.writeHead(400, { "Content-Type": "application/json" });
          res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "unknown or missing session id" }, id: null }));
          return;
        }
      }
      await web.handleRequest(req, res, body);
    } catch (e) {
      log.write(`[bridge] ${e.stack}\n`);
      if (!res.headersSent) { res.writeHead(500); res.end(); }
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  port = server.address().port;
  const url = `http://127.0.0.1:${port}/mcp`;
  return {
    url,
    async close() {
      for (const c of children) await c.close().catch(() => {});
      await new Promise((r) => server.close(r));
      server.closeAllConnections?.();
    },
  };
}
