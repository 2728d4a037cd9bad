#!/usr/bin/env bash
# inspector-strict.sh SERVER_BINARY [ENV=VAL ...] [-- SERVER_ARGS ...]
#
# Lists a stdio MCP server's tools with MCP Inspector's tool-schema portability lint
# (`mcp-inspector --cli --strict --method tools/list`) and fails on ANY finding.
#
# The Inspector itself exits 6 only on error-severity findings (rule boolean-schema); its
# warnings (type-union, remote-ref, untyped-schema) leave it at exit 0. This script counts
# both from the Inspector's own JSON (`--format json` → `schemaFindings`), prints them, and
# exits:
#   0  no finding
#   1  at least one warning or error
#   2  usage error, install failure, or the Inspector could not list the tools
#
# One check of its own (rule `dropped-tool`, an error): the Inspector silently drops a tool
# that fails the MCP SDK's validation of tools/list (e.g. an inputSchema without
# "type": "object") and lints the rest; the Gemini CLI rejects the whole list instead and
# loses every tool of the server. So the tools are listed once more, raw, and compared.
#
# Installs the pinned @modelcontextprotocol/inspector into $CACHE (default
# ~/.cache/geminicli-mcp/inspector) the first time, with npm from the npm registry only
# (--ignore-scripts: no install script runs; --before pins the transitive versions to what
# the registry had on PIN_DATE). Later runs use the cache and touch no network: the bin is
# run with node directly, never through npx.
#
# The Inspector passes the server only HOME LOGNAME PATH SHELL TERM USER from its own
# environment (the MCP SDK's getDefaultEnvironment); every other variable must be given
# here as ENV=VAL (they become `-e ENV=VAL`). The raw listing uses the same environment.
#
# Environment: CACHE (install dir), INSPECTOR_FULL=1 (also print the Inspector's own text
# report with its suggestions, and the server's stderr), PROTOCOL_ERA=legacy|auto|modern
# (default legacy: initialize at 2025-11-25; modern: server/discover at 2026-07-28),
# NODE (node binary).
set -euo pipefail

VERSION=2.12.0
PIN_DATE=2026-11-30
PKG=@modelcontextprotocol/inspector
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/geminicli-mcp/inspector}
NODE=${NODE:-node}
PROTOCOL_ERA=${PROTOCOL_ERA:-legacy}

usage() { sed -n '2p' "$0" | sed 's/^# /usage: /' >&2; exit 2; }
[ $# -ge 1 ] || usage
case $1 in -h|--help) usage ;; esac
server=$1; shift
envargs=()   # -e K=V pairs for the Inspector
envkv=()     # K=V for the raw listing
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; break ;;
    [A-Za-z_]*=*) envargs+=(-e "$1"); envkv+=("$1"); shift ;;
    *) echo "inspector-strict: not ENV=VAL: $1" >&2; usage ;;
  esac
done
server_args=("$@")
if [ ! -x "$server" ] && ! command -v "$server" >/dev/null 2>&1; then
  echo "inspector-strict: no executable $server" >&2; exit 2
fi
command -v "$NODE" >/dev/null || { echo "inspector-strict: node not found" >&2; exit 2; }

dir=$CACHE/$VERSION
bin=$dir/node_modules/$PKG/clients/launcher/build/index.js
installed_version() {
  "$NODE" -e 'try{process.stdout.write(require(process.argv[1]).version)}catch{}' \
    "$dir/node_modules/$PKG/package.json" 2>/dev/null
}
if [ "$(installed_version)" != "$VERSION" ] || [ ! -f "$bin" ]; then
  echo "inspector-strict: installing $PKG@$VERSION into $dir (once)" >&2
  mkdir -p "$dir"
  # engine-strict off: the package asks for node >=22.19, its CLI runs on node 20 (tested 20.20).
  if ! (cd "$dir" && npm install --prefix "$dir" "$PKG@$VERSION" --before="$PIN_DATE" \
          --no-audit --no-fund --no-update-notifier --ignore-scripts --engine-strict=false \
          --prefer-offline --fetch-retries=1 --fetch-timeout=30000 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=5000 --loglevel=error >"$dir/install.log" 2>&1); then
    cat "$dir/install.log" >&2
    echo "inspector-strict: npm install failed" >&2; exit 2
  fi
  [ "$(installed_version)" = "$VERSION" ] || { echo "inspector-strict: install incomplete" >&2; exit 2; }
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. The Inspector's strict lint. `${a[@]+"${a[@]}"}`: empty arrays under `set -u` (bash < 4.4).
set +e
"$NODE" "$bin" --cli --strict --format json --protocol-era "$PROTOCOL_ERA" \
  --method tools/list ${envargs[@]+"${envargs[@]}"} -- "$server" ${server_args[@]+"${server_args[@]}"} \
  >"$tmp/out.json" 2>"$tmp/err.txt"
rc=$?
set -e
# rc 0: listed, no error-severity finding; rc 6: listed, error-severity findings (--strict).
if [ $rc -ne 0 ] && [ $rc -ne 6 ]; then
  echo "inspector-strict: the Inspector failed (exit $rc):" >&2
  cat "$tmp/out.json" "$tmp/err.txt" >&2
  exit 2
fi
[ "${INSPECTOR_FULL:-0}" = 1 ] && cat "$tmp/err.txt" >&2

# 2. The raw listing (no validation), same environment as the Inspector gives the server.
cat >"$tmp/raw.js" <<'JS'
const { spawn } = require("child_process");
const [cmd, ...rest] = process.argv.slice(2);
const sep = rest.indexOf("--");
const kv = rest.slice(0, sep), args = rest.slice(sep + 1);
const env = {};
for (const k of ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]) {
  const v = process.env[k];
  if (v !== undefined && !v.startsWith("()")) env[k] = v;
}
for (const a of kv) { const i = a.indexOf("="); env[a.slice(0, i)] = a.slice(i + 1); }
const child = spawn(cmd, args, { env, stdio: ["pipe", "pipe", "ignore"] });
const tools = []; let buf = ""; let id = 0;
const send = (method, params) =>
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }) + "\n");
const done = (out) => { process.stdout.write(JSON.stringify(out)); child.kill(); process.exit(0); };
setTimeout(() => done({ error: "timeout listing tools" }), 20000).unref();
child.on("error", (e) => done({ error: e.message }));
child.stdout.on("data", (d) => {
  buf += d; let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i); buf = buf.slice(i + 1);
    let m; try { m = JSON.parse(line); } catch { continue; }
    if (m.id === undefined || m.method) continue;          // notifications, server requests
    if (m.error) done({ error: JSON.stringify(m.error) });
    if (m.id === 1) {
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
      send("tools/list", {});
    } else {
      tools.push(...((m.result && m.result.tools) || []));
      if (m.result && m.result.nextCursor) send("tools/list", { cursor: m.result.nextCursor });
      else done({ tools });
    }
  }
});
send("initialize", { protocolVersion: "2025-11-25", capabilities: {},
  clientInfo: { name: "inspector-strict-raw", version: "1" } });
JS
"$NODE" "$tmp/raw.js" "$server" ${envkv[@]+"${envkv[@]}"} -- ${server_args[@]+"${server_args[@]}"} \
  >"$tmp/raw.json" 2>/dev/null || true

# 3. Report.
cat >"$tmp/report.js" <<'JS'
const fs = require("fs");
const [file, rawFile, version] = process.argv.slice(2);
let doc;
try { doc = JSON.parse(fs.readFileSync(file, "utf8")); }
catch (e) { console.error(`inspector-strict: unreadable Inspector output: ${e.message}`); process.exit(2); }
const tools = (doc.result && doc.result.tools) || [];
const results = doc.schemaFindings || [];
const byRule = {}, example = {};
let errors = 0, warnings = 0;
const count = (sev, rule) => {
  sev === "error" ? errors++ : warnings++;
  byRule[`${sev} ${rule}`] = (byRule[`${sev} ${rule}`] || 0) + 1;
};
for (const { toolName, findings } of results) {
  for (const f of findings) {
    count(f.severity, f.rule);
    example[f.rule] ??= f;
    const where = f.path ? `${f.schema}.${f.path}` : f.schema;
    const detail = f.rule === "type-union" ? " " + (f.issue.match(/\((\[.*?\])\)/) || ["", ""])[1]
      : f.rule === "remote-ref" ? " " + (f.issue.match(/\(`(.*?)`\)/) || ["", ""])[1] : "";
    console.log(`${f.severity.toUpperCase()} ${f.rule} ${toolName} ${where}${detail}`);
  }
}
let raw; try { raw = JSON.parse(fs.readFileSync(rawFile, "utf8")); } catch { raw = { error: "no output" }; }
if (raw.error) console.log(`NOTE raw tools/list failed (${raw.error}): dropped tools not checked`);
else {
  const listed = new Set(tools.map((t) => t.name));
  for (const t of raw.tools) {
    if (listed.has(t.name)) continue;
    count("error", "dropped-tool");
    const why = !t.inputSchema || t.inputSchema.type !== "object" ? ' (inputSchema.type is not "object")' : "";
    console.log(`ERROR dropped-tool ${t.name}${why}: in the raw tools/list, not in the Inspector's ` +
      `(the MCP SDK rejects it; the Gemini CLI then loses every tool of this server)`);
  }
}
console.log(`\nMCP Inspector ${version} --strict: ${errors} error(s), ${warnings} warning(s); ` +
  `${tools.length} tool(s) listed [${tools.map((t) => t.name).join(", ")}], ${results.length} with findings`);
for (const [k, n] of Object.entries(byRule).sort()) console.log(`  ${n}\t${k}`);
for (const [rule, f] of Object.entries(example))
  console.log(`\n[${rule}] ${f.issue}\n  fix: ${f.suggestion}`);
process.exit(errors + warnings > 0 ? 1 : 0);
JS
"$NODE" "$tmp/report.js" "$tmp/out.json" "$tmp/raw.json" "$VERSION"
