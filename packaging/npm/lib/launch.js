'use strict';
// Runs one of this platform's binaries as if it were this process: stdio inherited, arguments
// passed on, the child's exit code returned and its death by a signal repeated on this process;
// signals sent to this process are passed to the child. Node cannot exec, so the binary is a
// child of this process.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const { binPath } = require('./index.js');

const FORWARDED = process.platform === 'win32' ? [] : ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];

function launch(name) {
  let bin;
  try {
    bin = binPath(name);
  } catch (e) {
    process.stderr.write(`${e.message}\n`);
    process.exit(1);
  }
  if (process.platform !== 'win32') {
    // Some tar extractors drop the executable bit; the binary is ours to fix.
    try {
      fs.accessSync(bin, fs.constants.X_OK);
    } catch {
      fs.chmodSync(bin, 0o755);
    }
  }
  // The handlers come first: the child may print (and a caller signal this process) before the
  // line after spawn() runs, and an unhandled SIGTERM would kill this process and orphan the
  // child. A handler runs from the event loop, after spawn() has returned.
  let child;
  const handlers = FORWARDED.map((signal) => {
    const handler = () => child.kill(signal);
    process.on(signal, handler);
    return [signal, handler];
  });
  // `geminicli-mcp setup` registers the command that ran it: this script (or npx, when it runs
  // from npx's cache), not the binary inside the package.
  const env =
    name === 'geminicli-mcp' ? { ...process.env, GEMINICLI_MCP_LAUNCHER: process.argv[1] ?? '' } : process.env;
  child = spawn(bin, process.argv.slice(2), { stdio: 'inherit', env });
  child.on('error', (e) => {
    process.stderr.write(`${name}: cannot start ${bin}: ${e.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    for (const [s, h] of handlers) process.removeListener(s, h);
    if (signal) {
      process.kill(process.pid, signal);
      // Still here: a signal Node ignores (SIGPIPE). Exit as a shell reports that death.
      process.exit(128 + (os.constants.signals[signal] ?? 0));
    }
    process.exit(code ?? 1);
  });
}

module.exports = { launch };
