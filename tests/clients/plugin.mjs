#!/usr/bin/env node
// plugin.mjs — the Claude Code plugin of a checkout (`.claude-plugin/marketplace.json` and
// `plugins/geminicli-mcp/`) put through the real Claude Code, headless and offline, as a user
// would: validate, add the marketplace, install the plugin, show its details, and run its eval
// cases against a scripted model (plugin-model.mjs) on loopback.
//
//   node tests/clients/plugin.mjs --checkout DIR --work DIR [--policy follow|always-gemini|never-gemini]
//
// stdout: one JSON document
//   {"version", "validate": {"marketplace", "plugin"}, "marketplace_add", "install", "details",
//    "eval": {"status", "cases": [{"name", "with", "without", "graders"}]}, "decisions"}
// where each step is `{status, output}` (the exit status and what the command printed), `details`
// adds `always_on` (the projected always-on tokens) and `components` (`[{name, always_on,
// on_invoke}]`, in tokens; `< 20` reads as 20), `decisions` is what the scripted model did in each
// conversation (plugin-model.mjs). The eval runs the installed plugin
// (`geminicli-mcp@geminicli-mcp`) with a no-plugin baseline arm, one run a case, under the
// policy given (default `follow`). Everything runs with a private HOME under DIR, a fake key, the
// model API at the mock and HTTP(S)_PROXY at the mock, which refuses and records any other host.
// Exit status: 0 when the document was printed, 3 when Claude Code tried to reach another host (the
// document is printed too), 2 on a usage error, 1 on any other failure.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { claudeEnv, ensureInstalled, installedVersion, pinned } from "./drive.mjs";
import { POLICIES, startPluginModel } from "./plugin-model.mjs";

const USAGE =
  "usage: node plugin.mjs --checkout DIR --work DIR [--policy follow|always-gemini|never-gemini] " +
  "[--server PATH --fake PATH]";

function parseArgs(argv) {
  const opts = { policy: "follow" };
  const names = {
    "--checkout": "checkout",
    "--work": "work",
    "--policy": "policy",
    "--server": "server",
    "--fake": "fake",
  };
  for (let i = 0; i < argv.length; i += 2) {
    const key = names[argv[i]];
    if (!key || argv[i + 1] === undefined) usage(`unexpected argument ${argv[i]}`);
    opts[key] = argv[i + 1];
  }
  if (!opts.checkout || !opts.work) usage("--checkout and --work are required");
  if (!POLICIES.includes(opts.policy)) usage(`unknown policy ${opts.policy}`);
  if (!opts.server !== !opts.fake) usage("--server and --fake go together");
  const resolved = (p) => p && path.resolve(p);
  return { ...opts, checkout: resolved(opts.checkout), work: resolved(opts.work), server: resolved(opts.server), fake: resolved(opts.fake) };
}

function usage(message) {
  process.stderr.write(`plugin.mjs: ${message}\n${USAGE}\n`);
  process.exit(2);
}

/** The tokens of a details cell: `~291` is 291, `< 20` is 20. */
const tokens = (cell) => Number(cell.replace(/[~<\s]/g, ""));

/** The figures of `claude plugin details`: the always-on total and each component's row. */
function parseDetails(text) {
  const total = text.match(/Always-on:\s+~?(\d+) tok/);
  const components = [];
  const table = text.split(/Per-component.*\n/)[1] ?? "";
  for (const line of table.split("\n")) {
    const m = line.match(/^\s+(\S+)\s+((?:~|< )\d+)\s+((?:~|< )\d+)\s*$/);
    if (m) components.push({ name: m[1], always_on: tokens(m[2]), on_invoke: tokens(m[3]) });
  }
  return { always_on: total ? Number(total[1]) : null, components };
}

/**
 * The cases of the eval's `--json` result: each case's mean score with the plugin and without it
 * (the baseline arm), and the graders of its runs with the plugin.
 */
function parseEval(file) {
  if (!fs.existsSync(file)) return [];
  const result = JSON.parse(fs.readFileSync(file, "utf8"));
  const mean = (runs) => (runs?.length ? runs.reduce((sum, r) => sum + r.score, 0) / runs.length : null);
  return (result.cases ?? []).map((c) => ({
    name: c.name,
    with: mean(c.arms?.with),
    without: mean(c.arms?.without),
    graders: (c.arms?.with ?? []).flatMap((r) => r.graders.map((g) => ({ name: g.name, passed: g.passed }))),
  }));
}

/** Runs `git args` in `cwd`; throws when it fails. */
function git(cwd, ...args) {
  const out = spawnSync("git", args, { cwd, encoding: "utf8" });
  if (out.status !== 0) throw new Error(`git ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

/**
 * The `/geminicli-mcp:review staged …` command typed in `claude -p`, in a repository with a staged
 * change, the plugin's server started by its own `.mcp.json` (`npx -y geminicli-mcp`, which finds
 * `--server` as the npm-global `geminicli-mcp` of a private npm prefix) running `--fake` as the
 * CLI. Returns `{status, output, diff, fake_prompts}`: the run, the staged diff, and the prompts
 * fake-gemini was given.
 */
async function typedReview(opts, env, run) {
  const repo = path.join(opts.work, "repo");
  fs.mkdirSync(repo, { recursive: true });
  git(repo, "init", "-q", "-b", "main");
  git(repo, "config", "user.email", "test@example.invalid");
  git(repo, "config", "user.name", "Test");
  const file = path.join(repo, "retry.rs");
  fs.writeFileSync(file, "fn retry() {\n    for _ in 0..3 {\n        attempt();\n    }\n}\n");
  git(repo, "add", ".");
  git(repo, "commit", "-q", "-m", "retry three times");
  fs.writeFileSync(file, "fn retry() {\n    loop {\n        attempt();\n    }\n}\n");
  git(repo, "add", ".");
  const npmPrefix = path.join(opts.work, "npm-global");
  fs.mkdirSync(path.join(npmPrefix, "bin"), { recursive: true });
  fs.symlinkSync(opts.server, path.join(npmPrefix, "bin", "geminicli-mcp"));
  const fakeLog = path.join(opts.work, "fake.jsonl");
  const where = {
    cwd: repo,
    env: {
      ...env,
      NPM_CONFIG_PREFIX: npmPrefix,
      NPM_CONFIG_UPDATE_NOTIFIER: "false",
      GEMINI_CLI_BIN: opts.fake,
      FAKE_GEMINI_LOG: fakeLog,
    },
  };
  const args = ["-p", "/geminicli-mcp:review staged focus: the loop", "--output-format", "json"];
  const result = await run(args, "command", where);
  const records = fs.existsSync(fakeLog)
    ? fs.readFileSync(fakeLog, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l))
    : [];
  return {
    ...result,
    diff: git(repo, "diff", "--cached"),
    fake_prompts: records.map((r) => r.prompt).filter((p) => typeof p === "string"),
  };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const spec = pinned().claude;
  const prefix = await ensureInstalled(spec);
  const claude = path.join(prefix, "node_modules", ".bin", "claude");
  const home = path.join(opts.work, "home");
  fs.mkdirSync(home, { recursive: true });

  const mock = await startPluginModel(opts.policy, path.join(opts.work, "mock.jsonl"));
  const env = claudeEnv({ home }, mock);
  // Not spawnSync: the mock answers in this process's event loop (Claude Code counts tokens
  // through the API for `details`).
  const run = (args, name, where = { cwd: home, env }) =>
    new Promise((resolve) => {
      const child = spawn(claude, args, { ...where, stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout.on("data", (c) => (output += c));
      child.stderr.on("data", (c) => (output += c));
      const timer = setTimeout(() => child.kill("SIGKILL"), 600_000);
      child.on("close", (status) => {
        clearTimeout(timer);
        fs.writeFileSync(path.join(opts.work, `${name}.txt`), output);
        resolve({ status, output });
      });
    });
  let report;
  try {
    const plugin = path.join(opts.checkout, "plugins", "geminicli-mcp");
    const validate = {
      marketplace: await run(["plugin", "validate", "--strict", opts.checkout], "validate-marketplace"),
      plugin: await run(["plugin", "validate", "--strict", plugin], "validate-plugin"),
    };
    const marketplace_add = await run(["plugin", "marketplace", "add", opts.checkout], "marketplace-add");
    const install = await run(["plugin", "install", "geminicli-mcp@geminicli-mcp"], "install");
    const details = await run(["plugin", "details", "geminicli-mcp"], "details");
    const evalJson = path.join(opts.work, "eval.json");
    const evalRun = await run(
      [
        "plugin", "eval", "geminicli-mcp@geminicli-mcp",
        "--trust-plugin", "--no-publish", "--runs", "1",
        "--output-dir", path.join(opts.work, "eval-results"),
        "--json", evalJson,
      ],
      "eval",
    );
    const command = opts.server ? await typedReview(opts, env, run) : null;
    report = {
      version: installedVersion(prefix, spec.package),
      command,
      validate,
      marketplace_add,
      install,
      details: { ...details, ...parseDetails(details.output) },
      eval: { ...evalRun, cases: parseEval(evalJson) },
      decisions: mock.decisions,
    };
  } finally {
    await mock.close();
  }
  process.stdout.write(JSON.stringify(report) + "\n");
  if (mock.outbound.length > 0) {
    process.stderr.write(`plugin.mjs: claude tried to reach other hosts: ${mock.outbound.join(", ")}\n`);
    process.exit(3);
  }
}

main().catch((e) => {
  process.stderr.write(`plugin.mjs: ${e?.stack ?? e}\n`);
  process.exit(1);
});
