#!/usr/bin/env node
// drive.mjs — runs one real MCP client headless, offline, against geminicli-mcp (which runs
// fake-gemini), with a mock model API whose "model" is model.mjs, and reports what the model was
// shown for each tool call.
//
//   node tests/clients/drive.mjs --client claude|codex|gemini --server PATH --fake PATH \
//        --scenario plain|error|loop|long|long-cjk|slow|jobs|ask --work DIR [--timeout-ms N] \
//        [--stream-results N] [--tasks] [--elicit DECISION] [--skills installed|removed]
//        [--user-prompt TEXT]
//
// Claude Code only: `--stream-results N` runs it with stream-json input and output and keeps its
// stdin open until its N-th `result` event (a turn's end; a background task's result starts
// another turn), `--tasks` adds the two switches that, with stream-json input, make it declare the
// tasks extension (its feature flag forced on through the local flag cache, and
// CLAUDE_AUTO_BACKGROUND_TASKS=1). A scenario's `toolTimeoutMs` becomes its MCP_TOOL_TIMEOUT (and,
// for a `jobs` scenario, Codex's tool_timeout_sec and the Gemini CLI's "timeout"; the server then
// lists the jobs tool set).
// `--elicit DECISION` installs an `Elicitation` command hook for the server (elicit-hook.mjs,
// written into DIR) that logs what it is given and accepts every form with `{decision: DECISION}`;
// without it Claude Code has no hook, and cancels every elicitation. A scenario's
// `fakeScenarioDir` (a folder of tests/clients) becomes the server's FAKE_GEMINI_SCENARIO_DIR, where
// fake-gemini finds the scenario file its prompt marker names.
// `--skills installed` runs `geminicli-mcp setup <client>` in the private home first, then
// `setup --remove --no-skills <client>` (the entry out, the skills kept: the client gets the entry
// below as in every run); `--skills removed` runs `setup` then `setup --remove`. The report's
// `skills` then says which of plugins/geminicli-mcp/skills the client put in a request to its model
// (each found by its front matter's description), which it loaded whole (`used`: its body's
// first heading in a request: the user invoked it, `/name` in Claude Code, `$name` in Codex) and
// what setup printed. `--user-prompt TEXT` replaces what the user asks the client.
//
// stdout: one JSON document
//   {"client", "version", "calls": [{"tool", "arguments", "seen", "error", "at_ms"}],
//    "notifications": [{"seen", "at_ms"}], "elicitations": [HOOK INPUT…], "done", "elapsed_ms"}
// `seen` is exactly the string the model received as the tool's result (content blocks or items
// joined by newlines where the client sends a list), `error` whether the client flagged it as an
// error (null: the client shows its model no flag), `notifications` the task notifications the
// client showed the model in later turns (Claude Code), `at_ms` when the model made the call or was
// shown the notification (ms since the run started), `elicitations` what the Elicitation hook was
// given, one JSON object a run of the hook (Claude Code with --elicit), `done` whether the model got to its final
// answer and the client exited 0. Diagnostics go to stderr; the client's own output, its config
// and the mock's request log (mock.jsonl; the request bodies too with DRIVE_LOG_BODIES=1) stay in
// DIR. Exit status: 0 when the document was printed, 2 on a usage error, 3 when the client tried
// to reach another host than its mock (the document is printed too), 1 on any other failure.
//
// The client is the version pinned in VERSIONS, installed with npm into
// ~/.cache/geminicli-mcp/clients/<package>-<version> when missing (GEMINICLI_MCP_CLIENTS_CACHE
// moves that folder). Each client is configured the way docs/clients.md tells users to, plus the
// switches that keep it offline: a fake key, its API's base URL at the mock, telemetry, updates and
// plugins off, a private HOME (and CODEX_HOME) under DIR, and HTTP(S)_PROXY at the mock, which
// refuses and reports any request for another host.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

import { Model, estimateTokens } from "./model.mjs";
import { startAnthropic } from "./mock-anthropic.mjs";
import { startOpenAI } from "./mock-openai.mjs";
import { startGemini } from "./mock-gemini.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));

const USAGE =
  "usage: node drive.mjs --client claude|codex|gemini --server PATH --fake PATH --scenario NAME " +
  "--work DIR [--timeout-ms N] [--stream-results N] [--tasks] [--elicit DECISION] [--skills installed|removed] [--user-prompt TEXT]";

function usage(message) {
  process.stderr.write(`drive.mjs: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { timeoutMs: 120_000, tasks: false };
  const names = {
    "--client": "client",
    "--server": "server",
    "--fake": "fake",
    "--scenario": "scenario",
    "--work": "work",
    "--timeout-ms": "timeoutMs",
    "--stream-results": "streamResults",
    "--elicit": "elicit",
    "--skills": "skills",
    "--user-prompt": "userPrompt",
  };
  const numeric = ["timeoutMs", "streamResults"];
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === "--tasks") {
      opts.tasks = true;
      i -= 1;
      continue;
    }
    const key = names[argv[i]];
    if (!key || argv[i + 1] === undefined) usage(`unexpected argument ${argv[i]}`);
    opts[key] = numeric.includes(key) ? Number(argv[i + 1]) : argv[i + 1];
  }
  for (const k of ["client", "server", "fake", "scenario", "work"]) if (!opts[k]) usage(`--${k} is required`);
  if (!CLIENTS[opts.client]) usage(`unknown client ${opts.client}`);
  if (opts.streamResults !== undefined && !(Number.isInteger(opts.streamResults) && opts.streamResults > 0))
    usage("--stream-results takes a positive count");
  if ((opts.tasks || opts.streamResults || opts.elicit) && opts.client !== "claude")
    usage("--tasks, --stream-results and --elicit are for claude only");
  if (opts.skills !== undefined && !["installed", "removed"].includes(opts.skills))
    usage("--skills takes installed or removed");
  opts.server = path.resolve(opts.server);
  opts.fake = path.resolve(opts.fake);
  opts.work = path.resolve(opts.work);
  return opts;
}

// ------------------------------------------------------------------------------ installs ---

/** `{client: {package, version}}` from VERSIONS. */
export function pinned() {
  const out = {};
  for (const line of fs.readFileSync(path.join(HERE, "VERSIONS"), "utf8").split("\n")) {
    const [client, pkg, version] = line.replace(/#.*/, "").trim().split(/\s+/);
    if (version) out[client] = { package: pkg, version };
  }
  return out;
}

/** The version of `pkg` installed under `prefix`, if any. */
export function installedVersion(prefix, pkg) {
  try {
    return JSON.parse(fs.readFileSync(path.join(prefix, "node_modules", pkg, "package.json"), "utf8"))
      .version;
  } catch {
    return undefined;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Holds `lock` (a directory) while `fn` runs; a lock whose holder died is taken over. */
async function withLock(lock, fn) {
  for (;;) {
    try {
      fs.mkdirSync(lock);
      fs.writeFileSync(path.join(lock, "pid"), String(process.pid));
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
      const holder = Number(fs.readFileSync(path.join(lock, "pid"), { encoding: "utf8", flag: "a+" }));
      let alive = true;
      try {
        process.kill(holder, 0);
      } catch {
        alive = false;
      }
      if (holder && !alive) fs.rmSync(lock, { recursive: true, force: true });
      else await sleep(500);
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * The install prefix of the pinned `pkg@version`, installed with npm when missing: into a fresh
 * folder that is renamed into place, under a lock, so concurrent runs neither install twice nor
 * see half an install.
 */
export async function ensureInstalled({ package: pkg, version }) {
  const cache =
    process.env.GEMINICLI_MCP_CLIENTS_CACHE ?? path.join(os.homedir(), ".cache", "geminicli-mcp", "clients");
  const prefix = path.join(cache, `${pkg.split("/").pop()}-${version}`);
  if (installedVersion(prefix, pkg) === version) return prefix;
  fs.mkdirSync(cache, { recursive: true });
  return withLock(`${prefix}.lock`, () => {
    if (installedVersion(prefix, pkg) === version) return prefix;
    const fresh = `${prefix}.installing`;
    fs.rmSync(fresh, { recursive: true, force: true });
    process.stderr.write(`drive.mjs: installing ${pkg}@${version} into ${prefix}\n`);
    const npm = spawnSync(
      "npm",
      ["install", "--prefix", fresh, `${pkg}@${version}`, "--no-audit", "--no-fund", "--loglevel=error"],
      {
        stdio: ["ignore", 2, 2],
      },
    );
    if (npm.status !== 0)
      throw new Error(`npm install ${pkg}@${version} failed (${npm.error ?? `exit ${npm.status}`})`);
    if (installedVersion(fresh, pkg) !== version)
      throw new Error(`npm installed no ${pkg}@${version} into ${fresh}`);
    fs.rmSync(prefix, { recursive: true, force: true });
    fs.renameSync(fresh, prefix);
    return prefix;
  });
}

// ------------------------------------------------------------------------------- clients ---

/** What every client's environment starts from: nothing of the caller's but PATH and locale. */
function baseEnv(run, mock) {
  return {
    PATH: process.env.PATH,
    HOME: run.home,
    LANG: "C.UTF-8",
    TERM: "dumb",
    NO_COLOR: "1",
    HTTPS_PROXY: mock.url,
    HTTP_PROXY: mock.url,
    https_proxy: mock.url,
    http_proxy: mock.url,
    NO_PROXY: "127.0.0.1,localhost",
    no_proxy: "127.0.0.1,localhost",
  };
}

/** Claude Code's environment: the base, the mock as its API, telemetry, updates and reports off. */
export function claudeEnv(run, mock) {
  return {
    ...baseEnv(run, mock),
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: "sk-ant-fake-offline-key",
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_BUG_COMMAND: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DO_NOT_TRACK: "1",
  };
}

/** The server's own environment, as the snippets of docs/clients.md set it. */
// GEMINICLI_MCP_BACKEND in the test's own environment (e.g. `acp`) picks the server's backend.
// A scenario's own fake-gemini scenario files come in FAKE_GEMINI_SCENARIO_DIR.
const serverEnv = (run) => ({
  GEMINI_CLI_BIN: run.fake,
  ...(run.jobs ? { GEMINICLI_MCP_TOOLSETS: "jobs", FAKE_GEMINI_LOG: fakeLog(run) } : {}),
  ...(process.env.GEMINICLI_MCP_BACKEND ? { GEMINICLI_MCP_BACKEND: process.env.GEMINICLI_MCP_BACKEND } : {}),
  ...(run.fakeScenarioDir ? { FAKE_GEMINI_SCENARIO_DIR: run.fakeScenarioDir } : {}),
});

/** fake-gemini's log of its runs and the processes they spawned (a `jobs` scenario). */
const fakeLog = (run) => path.join(run.dir, "fake.jsonl");

/** The records of fake-gemini's log, when there is one. */
function fakeRecords(run) {
  const log = fakeLog(run);
  if (!fs.existsSync(log)) return [];
  return fs.readFileSync(log, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

/**
 * The pids of fake-gemini's log still alive `graceMs` after the client exited: what the client and
 * the server left running (none should be: the server ends its runs when its client goes).
 */
async function leftRunning(run, graceMs) {
  const pids = [...new Set(fakeRecords(run).map((r) => r.pid))];
  const alive = () =>
    pids.filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
  const until = Date.now() + graceMs;
  while (alive().length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  return alive();
}

/** The file the Elicitation hook appends what it is given to, one JSON line a run. */
const elicitLog = (run) => path.join(run.dir, "elicitations.jsonl");

/**
 * Claude Code's `Elicitation` command hook for the server named `gemini` (in
 * `$HOME/.claude/settings.json`): a node script in the run's folder that appends its input to
 * elicitLog(run) and accepts the form with `{decision}`.
 */
function installElicitHook(run, decision) {
  const script = path.join(run.dir, "elicit-hook.mjs");
  fs.writeFileSync(
    script,
    [
      `// Claude Code Elicitation hook: logs its input, accepts the form with {decision: argv[2]}.`,
      `import fs from "node:fs";`,
      `const [decision, log] = process.argv.slice(2);`,
      `let input = "";`,
      `process.stdin.on("data", (c) => (input += c));`,
      `process.stdin.on("end", () => {`,
      `  let given;`,
      `  try {`,
      `    given = JSON.parse(input);`,
      `  } catch {`,
      `    given = { unparsed: input };`,
      `  }`,
      `  fs.appendFileSync(log, JSON.stringify(given) + "\\n");`,
      `  const answer = { hookEventName: "Elicitation", action: "accept", content: { decision } };`,
      `  process.stdout.write(JSON.stringify({ hookSpecificOutput: answer }));`,
      `});`,
      ``,
    ].join("\n"),
  );
  const q = (a) => `'${a.replace(/'/g, `'\\''`)}'`; // a POSIX shell word
  const command = [process.execPath, script, decision, elicitLog(run)].map(q).join(" ");
  const hooks = { Elicitation: [{ matcher: "gemini", hooks: [{ type: "command", command }] }] };
  fs.mkdirSync(path.join(run.home, ".claude"), { recursive: true });
  fs.writeFileSync(path.join(run.home, ".claude", "settings.json"), JSON.stringify({ hooks }, null, 2));
}

/** How to run each client: its mock, and a function that configures it and returns the command. */
const CLIENTS = {
  // Claude Code: `claude mcp add` (docs/clients.md), then `claude -p` with the server's tools
  // allowed (headless runs refuse a tool that would ask for permission).
  claude: {
    mock: startAnthropic,
    setup(run, prefix, mock) {
      const claude = path.join(prefix, "node_modules", ".bin", "claude");
      const env = {
        ...claudeEnv(run, mock),
        ...(run.toolTimeoutMs ? { MCP_TOOL_TIMEOUT: String(run.toolTimeoutMs) } : {}),
        // Tasks: the flag cache of ~/.claude.json (written below) is read with telemetry off only
        // with this, and a headless session backgrounds a call as a task only with the other.
        ...(run.tasks
          ? { CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF: "1", CLAUDE_AUTO_BACKGROUND_TASKS: "1" }
          : {}),
      };
      const envFlags = Object.entries(serverEnv(run)).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
      const add = spawnSync(claude, ["mcp", "add", "gemini", ...envFlags, "--", run.server], {
        cwd: run.project,
        env,
        encoding: "utf8",
      });
      fs.writeFileSync(path.join(run.dir, "claude-mcp-add.txt"), `${add.stdout}${add.stderr}`);
      if (add.status !== 0) throw new Error(`claude mcp add failed (exit ${add.status}): ${add.stderr}`);
      if (run.tasks) {
        // The feature flag that lets Claude Code declare the tasks extension, on in its cache.
        const file = path.join(run.home, ".claude.json");
        const config = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : {};
        config.cachedGrowthBookFeatures = { ...config.cachedGrowthBookFeatures, tengu_glowing_lark: true };
        fs.writeFileSync(file, JSON.stringify(config, null, 2));
      }
      if (run.elicit) installElicitHook(run, run.elicit);
      const allowed = ["--allowedTools", "mcp__gemini__*"];
      if (run.streamResults) {
        const stream = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"];
        const args = ["-p", ...stream, ...allowed];
        const input = { type: "user", message: { role: "user", content: run.userPrompt } };
        return { command: claude, args, env, stream: { input, results: run.streamResults } };
      }
      const args = ["-p", run.userPrompt, ...allowed, "--output-format", "json"];
      return { command: claude, args, env };
    },
  },

  // Codex: the [mcp_servers.gemini] table of docs/clients.md in a private CODEX_HOME, the mock as
  // its model provider, `codex exec` (--strict-config: a key the docs got wrong fails the run).
  codex: {
    mock: startOpenAI,
    setup(run, prefix, mock) {
      const codexHome = path.join(run.home, ".codex");
      fs.mkdirSync(codexHome, { recursive: true });
      const q = JSON.stringify; // a JSON string is a TOML basic string
      const toml = [
        `model = "gpt-5.5"`,
        `model_provider = "mock"`,
        `check_for_update_on_startup = false`,
        ``,
        `[analytics]`,
        `enabled = false`,
        ``,
        `[feedback]`,
        `enabled = false`,
        ``,
        `[features]`,
        `plugins = false # else it syncs plugin marketplaces from github.com and chatgpt.com`,
        ``,
        `[otel]`,
        `exporter = "none"`,
        `trace_exporter = "none"`,
        `metrics_exporter = "none"`,
        ``,
        `[model_providers.mock]`,
        `name = "mock"`,
        `base_url = ${q(`${mock.url}/v1`)}`,
        `env_key = "MOCK_API_KEY"`,
        `wire_api = "responses"`,
        `request_max_retries = 0`,
        `stream_max_retries = 0`,
        ``,
        // From here on: docs/clients.md's snippet.
        `[mcp_servers.gemini]`,
        `command = ${q(run.server)}`,
        `default_tools_approval_mode = "approve"`,
        `tool_timeout_sec = ${run.toolTimeoutMs ? Math.ceil(run.toolTimeoutMs / 1000) : 600}`,
        `env_vars = ["GEMINI_API_KEY"]`,
        ``,
        `[mcp_servers.gemini.env]`,
        ...Object.entries(serverEnv(run)).map(([k, v]) => `${k} = ${q(v)}`),
        ``,
      ].join("\n");
      fs.writeFileSync(path.join(codexHome, "config.toml"), toml);
      const env = {
        ...baseEnv(run, mock),
        CODEX_HOME: codexHome,
        MOCK_API_KEY: "sk-mock-fake-offline-key",
        GEMINI_API_KEY: "fake-gemini-key",
      };
      const args = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--strict-config",
        "-C",
        run.project,
        run.userPrompt,
      ];
      return { command: path.join(prefix, "node_modules", ".bin", "codex"), args, env };
    },
  },

  // The Gemini CLI: the mcpServers entry of docs/clients.md ("trust": true, GEMINI_API_KEY passed
  // on explicitly) in a private ~/.gemini/settings.json, the mock as its API, `gemini -p`.
  gemini: {
    mock: startGemini,
    setup(run, prefix, mock) {
      const settings = {
        security: { auth: { selectedType: "gemini-api-key" } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
        mcpServers: {
          gemini: {
            command: run.server,
            env: { GEMINI_API_KEY: "$GEMINI_API_KEY", ...serverEnv(run) },
            trust: true,
            ...(run.toolTimeoutMs ? { timeout: run.toolTimeoutMs } : {}),
          },
        },
      };
      fs.mkdirSync(path.join(run.home, ".gemini"), { recursive: true });
      fs.writeFileSync(path.join(run.home, ".gemini", "settings.json"), JSON.stringify(settings, null, 2));
      const env = {
        ...baseEnv(run, mock),
        GEMINI_API_KEY: "fake-gemini-key",
        GOOGLE_GEMINI_BASE_URL: mock.url,
      };
      const args = ["-p", run.userPrompt, "-o", "json", "--skip-trust"];
      return { command: path.join(prefix, "node_modules", ".bin", "gemini"), args, env };
    },
  },
};

// ----------------------------------------------------------------------------- scenarios ---

/** The fake-gemini marker's quoting of a value (`\`, `"`, newline and tab escaped). */
const quoteParam = (s) =>
  `"${s.replace(/[\\"\n\t]/g, (c) => ({ "\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t" })[c])}"`;

/** A scenario of scenarios.json. */
function scenario(name) {
  const all = JSON.parse(fs.readFileSync(path.join(HERE, "scenarios.json"), "utf8"));
  const s = all[name];
  if (!s) usage(`unknown scenario ${name} (${Object.keys(all).join(", ")})`);
  return s;
}

/** The prompt the model sends with its first gemini_prompt call. */
const scenarioPrompt = (s) =>
  s.prompt ?? `[[fake-gemini:success text=${quoteParam(s.chunk)} repeat=${s.repeat}]]`;

// -------------------------------------------------------------------------------- skills ---

/** Each skill of the plugin: its name and its front matter's description. */
function ourSkills() {
  const dir = path.join(HERE, "..", "..", "plugins", "geminicli-mcp", "skills");
  return fs.readdirSync(dir).sort().map((name) => {
    const text = fs.readFileSync(path.join(dir, name, "SKILL.md"), "utf8");
    const description = /^description: (.*)$/m.exec(text)?.[1] ?? "";
    return { name, description, heading: /^# .*$/m.exec(text)?.[0] ?? "" };
  });
}

/** `geminicli-mcp setup` for the client in the run's home, as `--skills` asks; its output. */
function setupSkills(run, client, mode) {
  const name = { claude: "claude-code", codex: "codex", gemini: "gemini-cli" }[client];
  const env = { PATH: process.env.PATH, HOME: run.home, CODEX_HOME: path.join(run.home, ".codex") };
  const steps = [["setup", name], ["setup", "--remove", ...(mode === "installed" ? ["--no-skills"] : []), name]];
  let out = "";
  for (const args of steps) {
    const r = spawnSync(run.server, args, { env, encoding: "utf8" });
    out += `$ geminicli-mcp ${args.join(" ")}\n${r.stdout}${r.stderr}`;
    if (r.status !== 0) throw new Error(`geminicli-mcp ${args.join(" ")} failed:\n${out}`);
  }
  return out;
}

/** The skills whose description (`seen`) and whose body (`used`) a request to the model carries. */
function skillsSeen(run) {
  const bodies = fs
    .readFileSync(path.join(run.dir, "mock.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l).body)
    .filter(Boolean)
    .map((b) => JSON.stringify(b));
  // A description travels as a JSON string, escaped as JSON escapes it.
  const escaped = (s) => JSON.stringify(s).slice(1, -1);
  const carried = (text) => bodies.some((b) => b.includes(escaped(text)));
  const skills = ourSkills();
  return {
    seen: skills.filter((s) => carried(s.description)).map((s) => s.name),
    used: skills.filter((s) => carried(s.heading)).map((s) => s.name),
  };
}

/**
 * Makes `dir` a git repository with one commit of `change.file` holding `change.before`, then
 * writes `change.after` over it: an uncommitted change to review.
 */
function makeRepo(dir, change) {
  const git = (...args) => {
    const r = spawnSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], {
      cwd: dir,
      encoding: "utf8",
      env: { PATH: process.env.PATH, HOME: dir, GIT_CONFIG_NOSYSTEM: "1" },
    });
    if (r.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
  };
  git("init", "-q", "-b", "main");
  fs.writeFileSync(path.join(dir, change.file), change.before);
  git("add", change.file);
  git("commit", "-q", "-m", "first");
  fs.writeFileSync(path.join(dir, change.file), change.after);
}

// ---------------------------------------------------------------------------------- main ---

/**
 * Runs `command` in its own process group; kills the group at `timeoutMs` and when it ends. With
 * `stream`, writes `stream.input` as one JSON line to its stdin and closes that only after the
 * `stream.results`-th `result` event on its stdout (stream-json, copied to client.stdout).
 */
function runClient({ command, args, env, stream }, run, timeoutMs) {
  const out = fs.openSync(path.join(run.dir, "client.stdout"), "w");
  const err = fs.openSync(path.join(run.dir, "client.stderr"), "w");
  const stdio = stream ? ["pipe", "pipe", err] : ["ignore", out, err];
  const child = spawn(command, args, { cwd: run.project, env, stdio, detached: true });
  if (stream) {
    child.stdin.on("error", () => {}); // it may exit before reading
    child.stdin.write(JSON.stringify(stream.input) + "\n");
    let results = 0;
    readline.createInterface({ input: child.stdout }).on("line", (line) => {
      fs.writeSync(out, line + "\n");
      let event;
      try {
        event = JSON.parse(line);
      } catch {
        return;
      }
      if (event?.type === "result" && ++results === stream.results) child.stdin.end();
    });
  }
  const killGroup = () => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      process.stderr.write(
        `drive.mjs: ${path.basename(command)} still running after ${timeoutMs} ms: killed\n`,
      );
      killGroup();
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      resolve({ code: null, error: String(e) });
    });
    child.on("exit", async (code, signal) => {
      clearTimeout(timer);
      // What is still running a while after the client went is what it left behind.
      const left = run.jobs ? await leftRunning(run, 5000) : [];
      // A server or CLI the client left behind must not outlive the run.
      killGroup();
      resolve({ code, signal, left });
    });
  });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const spec = pinned()[opts.client];
  if (!spec) usage(`VERSIONS pins no ${opts.client}`);
  const prefix = await ensureInstalled(spec);

  const s = scenario(opts.scenario);
  if (s.toolTimeoutMs && !s.jobs && opts.client !== "claude") usage(`scenario ${opts.scenario} is for claude only`);
  const run = {
    dir: opts.work,
    home: path.join(opts.work, "home"),
    project: path.join(opts.work, "project"),
    server: opts.server,
    fake: opts.fake,
    userPrompt: opts.userPrompt ?? (s.commands
      ? s.commands[opts.client]
      : s.jobs
      ? "Start a Gemini job with the gemini_start tool (with an idempotency key, and once more with the same key), start a second job and cancel it, list the jobs, wait for the first with gemini_wait, then read its whole answer."
      : "Ask Gemini with the gemini_prompt tool, then read its whole answer."),
    toolTimeoutMs: s.toolTimeoutMs,
    jobs: s.jobs,
    streamResults: opts.streamResults,
    tasks: opts.tasks,
    elicit: opts.elicit,
    fakeScenarioDir: s.fakeScenarioDir ? path.join(HERE, s.fakeScenarioDir) : undefined,
  };
  for (const d of [run.home, run.project]) fs.mkdirSync(d, { recursive: true });
  let setupOutput;
  if (opts.skills) {
    setupOutput = setupSkills(run, opts.client, opts.skills);
    process.env.DRIVE_LOG_BODIES = "1"; // the mock logs the bodies skillsSeen reads
  }
  if (s.change) makeRepo(run.project, s.change);
  if (s.commands && !run.userPrompt) usage(`scenario ${opts.scenario} has no command for ${opts.client}`);

  const jobs = s.jobs ? { waitS: s.waitS, key: s.key, cancelPrompt: s.cancelPrompt } : null;
  const model = new Model(s.follow ? null : scenarioPrompt(s), s.arguments, jobs, s.follow ?? null);
  const client = CLIENTS[opts.client];
  const mock = await client.mock(model, path.join(run.dir, "mock.jsonl"));
  const started = Date.now();
  let exit;
  try {
    const cmd = client.setup(run, prefix, mock);
    fs.writeFileSync(path.join(run.dir, "command.json"), JSON.stringify(cmd, null, 2));
    exit = await runClient(cmd, run, opts.timeoutMs);
  } finally {
    await mock.close();
  }
  const elapsed = Date.now() - started;
  if (exit.code !== 0) {
    const tail = fs.readFileSync(path.join(run.dir, "client.stderr"), "utf8").slice(-2000);
    const how = exit.code ?? exit.signal ?? exit.error;
    process.stderr.write(`drive.mjs: ${opts.client} exited ${how}; its stderr ends:\n${tail}\n`);
  }
  const report = {
    client: opts.client,
    version: installedVersion(prefix, spec.package),
    calls: model.calls.map(({ tool, arguments: args, seen, error, at_ms }) => ({
      tool,
      arguments: args,
      seen: seen ?? null,
      error,
      at_ms,
    })),
    notifications: model.notifications,
    elicitations: fs.existsSync(elicitLog(run))
      ? fs.readFileSync(elicitLog(run), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l))
      : [],
    done: model.ended && exit.code === 0,
    // A prompt's scenario: the message the client gave the model for the user's command (null:
    // none held the scenario's `follow` text), its size and its estimated tokens, and how many
    // model requests carried it.
    prompt_message: model.follow
      ? {
          text: model.heard,
          chars: model.heard?.length ?? 0,
          tokens: model.heard ? estimateTokens(model.heard) : 0,
          requests: model.heardIn,
        }
      : undefined,
    elapsed_ms: elapsed,
    // A `jobs` scenario: fake-gemini's runs (their pid and prompt: a one-shot process's, or a
    // warm agent's `session/prompt`), and the pids of its log still alive 5 s after the client
    // exited.
    fake_runs: fakeRecords(run)
      .filter(
        (r) => (r.event === "invocation" && r.argv && !r.argv.includes("--acp")) ||
          (r.event === "acp-request" && r.method === "session/prompt"),
      )
      .map(({ pid, prompt }) => ({ pid, prompt })),
    left_running: exit.left ?? [],
    ...(opts.skills ? { skills: { ...skillsSeen(run), setup: setupOutput } } : {}),
  };
  process.stdout.write(JSON.stringify(report) + "\n");
  if (mock.outbound.length > 0) {
    process.stderr.write(
      `drive.mjs: ${opts.client} tried to reach other hosts: ${mock.outbound.join(", ")}\n`,
    );
    process.exit(3);
  }
}

// Run as a script, not when another driver imports the installs from here.
// (Node gives import.meta.url the script's real path, so a symlinked argv[1] is resolved too.)
if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    process.stderr.write(`drive.mjs: ${e?.stack ?? e}\n`);
    process.exit(1);
  });
}
