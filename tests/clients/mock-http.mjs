// mock-http.mjs — what the three mock model APIs share: a loopback HTTP server that reads JSON
// bodies, answers with a handler, logs every request, and catches any attempt to go elsewhere.
//
// The clients run with HTTP(S)_PROXY pointing at their mock, so a request meant for any other
// host arrives here too — as a CONNECT (https) or with an absolute URL (http) — and is refused
// and recorded in `outbound`. The driver fails a run that has any.

import fs from "node:fs";
import http from "node:http";
import path from "node:path";

/**
 * Starts a server on 127.0.0.1 (an ephemeral port). `handler(req, body, res)` answers the
 * requests for the mock itself; `body` is the parsed JSON body (undefined when there is none or
 * it is not JSON). Returns `{url, port, outbound, close()}`; `logFile` receives one JSON line per
 * request.
 */
export async function serve(handler, logFile) {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const log = (entry) =>
    fs.appendFileSync(logFile, JSON.stringify({ t: new Date().toISOString(), ...entry }) + "\n");
  const outbound = [];

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      // A proxied plain-HTTP request names its host in the request line.
      if (/^[a-z]+:\/\//i.test(req.url) && !/^https?:\/\/(127\.0\.0\.1|localhost)[:/]/i.test(req.url)) {
        outbound.push(`${req.method} ${req.url}`);
        log({ method: req.method, url: req.url, refused: true });
        res.writeHead(403).end();
        return;
      }
      const raw = Buffer.concat(chunks).toString("utf8");
      let body;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        body = undefined;
      }
      log({
        method: req.method,
        url: req.url,
        bytes: raw.length,
        ...(process.env.DRIVE_LOG_BODIES ? { body } : {}),
      });
      try {
        await handler(req, body, res);
      } catch (err) {
        log({ url: req.url, error: String(err?.stack ?? err) });
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `mock: ${err}` } }));
      }
    });
  });
  server.on("connect", (req, socket) => {
    outbound.push(`CONNECT ${req.url}`);
    log({ method: "CONNECT", url: req.url, refused: true });
    socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = server.address().port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    outbound,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/** Writes one server-sent event: `event:` (when given) and `data:` with the JSON of `data`. */
export function sse(res, data, event) {
  res.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
}

/** Starts a `text/event-stream` response. */
export function startEvents(res) {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
}

/** Answers with a JSON body. */
export function json(res, value, status = 200) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}
