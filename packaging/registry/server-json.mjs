#!/usr/bin/env node
// Writes the server.json to publish to the MCP Registry for a release: the committed server.json
// (name, description, repository, the npm package) with one `mcpb` package per bundle added, each
// naming the bundle's download URL on the GitHub release and its SHA-256. The sums exist only once
// the bundles are built, so the committed file carries no mcpb entries: the registry refuses an
// mcpb package without a fileSha256, and a made-up sum would be a false integrity promise.
//
//   node packaging/registry/server-json.mjs --version V --mcpb DIR [--platforms P,...] [--out FILE]
//
// V is the release's version (the tag without its `v`); it must be the version server.json and
// the root Cargo.toml pin. DIR holds geminicli-mcp-V-<platform>.mcpb (packaging/mcpb/build.mjs);
// every platform's bundle is required unless --platforms names fewer. The result goes to FILE, or
// to stdout. Only the standard library is used.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');

/** The platforms packaging/mcpb/build.mjs builds a bundle for. */
const PLATFORMS = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64'];

function parseArgs(argv) {
  const args = { version: null, mcpb: null, out: null, platforms: PLATFORMS };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--version') args.version = argv[++i];
    else if (a === '--mcpb') args.mcpb = path.resolve(argv[++i] ?? '');
    else if (a === '--out') args.out = path.resolve(argv[++i] ?? '');
    else if (a === '--platforms') {
      args.platforms = (argv[++i] ?? '').split(',').filter(Boolean);
      const unknown = args.platforms.filter((p) => !PLATFORMS.includes(p));
      if (unknown.length) throw new Error(`unknown platform ${unknown.join(', ')}; known: ${PLATFORMS.join(', ')}`);
    } else throw new Error(`unexpected argument ${a}`);
  }
  if (!args.version || !args.mcpb) {
    throw new Error('usage: server-json.mjs --version V --mcpb DIR [--platforms P,...] [--out FILE]');
  }
  return args;
}

function crateVersion() {
  const text = fs.readFileSync(path.join(root, 'Cargo.toml'), 'utf8');
  const pkg = text.split(/^\[/m).find((s) => s.startsWith('package]')) ?? '';
  const m = pkg.match(/^version\s*=\s*"([^"]+)"/m);
  if (!m) throw new Error('Cargo.toml: no [package] version');
  return m[1];
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const server = JSON.parse(fs.readFileSync(path.join(root, 'server.json'), 'utf8'));
  const crate = crateVersion();
  if (args.version !== server.version || args.version !== crate) {
    throw new Error(
      `release ${args.version}, but server.json says ${server.version} and Cargo.toml ${crate}: ` +
        'bump them together',
    );
  }
  const repo = server.repository.url.replace(/\/$/, '');
  const bundles = args.platforms.map((platform) => {
    const file = `geminicli-mcp-${args.version}-${platform}.mcpb`;
    const full = path.join(args.mcpb, file);
    if (!fs.existsSync(full)) throw new Error(`${full} is missing`);
    return {
      registryType: 'mcpb',
      identifier: `${repo}/releases/download/v${args.version}/${file}`,
      version: args.version,
      fileSha256: crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex'),
      transport: { type: 'stdio' },
    };
  });
  const packages = (server.packages ?? []).filter((p) => p.registryType !== 'mcpb');
  const text = `${JSON.stringify({ ...server, packages: [...packages, ...bundles] }, null, 2)}\n`;
  if (args.out) fs.writeFileSync(args.out, text);
  else process.stdout.write(text);
}

try {
  main();
} catch (e) {
  console.error(`server-json.mjs: ${e.message}`);
  process.exit(2);
}
