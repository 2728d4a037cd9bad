#!/usr/bin/env node
// Assembles the npm packages from built binaries: the main package fake-gemini (the launchers in
// bin/, optional dependencies on every platform package) and one package per platform given, each
// holding that platform's fake-gemini, fake-gemini-api and gemini-mcp-conformance.
//
//   node packaging/npm/build.mjs --out DIR [--pack] [PLATFORM=BINDIR ...]
//
// PLATFORM is Node's `${process.platform}-${process.arch}` (linux-x64, linux-arm64, darwin-x64,
// darwin-arm64, win32-x64); BINDIR holds the three binaries (.exe on Windows). Every package takes
// the version of the fake-gemini crate. With --pack, each package is packed into DIR with
// `npm pack`. Nothing is published.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const require = (await import('node:module')).createRequire(import.meta.url);
const { BINARIES, PLATFORMS } = require('./fake-gemini/lib/index.js');
const SCOPE = '@geminicli-mcp';

function crateVersion(manifest) {
  const text = fs.readFileSync(path.join(root, manifest), 'utf8');
  const pkg = text.split(/^\[/m).find((s) => s.startsWith('package]'));
  const m = pkg && pkg.match(/^version\s*=\s*"([^"]+)"/m);
  if (!m) throw new Error(`${manifest}: no [package] version`);
  return m[1];
}

function parseArgs(argv) {
  const args = { out: null, pack: false, platforms: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--out') args.out = path.resolve(argv[++i] ?? '');
    else if (a === '--pack') args.pack = true;
    else if (a.includes('=')) {
      const [platform, dir] = a.split(/=(.*)/s);
      if (!PLATFORMS.includes(platform)) {
        throw new Error(`unknown platform ${platform}; known: ${PLATFORMS.join(', ')}`);
      }
      args.platforms.push({ platform, dir: path.resolve(dir) });
    } else throw new Error(`unexpected argument ${a}`);
  }
  if (!args.out) throw new Error('usage: build.mjs --out DIR [--pack] [PLATFORM=BINDIR ...]');
  return args;
}

function writeJson(file, value) {
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function common(version) {
  return { version, license: 'MIT' };
}

function mainPackage(out, version) {
  const dir = path.join(out, 'fake-gemini');
  fs.cpSync(path.join(here, 'fake-gemini'), dir, { recursive: true });
  fs.copyFileSync(path.join(root, 'LICENSE'), path.join(dir, 'LICENSE'));
  writeJson(path.join(dir, 'package.json'), {
    name: 'fake-gemini',
    ...common(version),
    description:
      "A scriptable stand-in for Google's Gemini CLI 0.61 and the gemini-mcp-conformance suite, for testing Gemini wrappers",
    keywords: ['gemini', 'gemini-cli', 'testing', 'fake', 'mcp', 'conformance'],
    main: 'lib/index.js',
    bin: Object.fromEntries(BINARIES.map((b) => [b, `bin/${b}`])),
    files: ['bin', 'lib', 'README.md', 'LICENSE'],
    engines: { node: '>=18' },
    optionalDependencies: Object.fromEntries(
      PLATFORMS.map((p) => [`${SCOPE}/fake-gemini-${p}`, version]),
    ),
  });
  return dir;
}

function platformPackage(out, version, { platform, dir: binDir }) {
  const [os, cpu] = platform.split('-');
  const dir = path.join(out, `fake-gemini-${platform}`);
  fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
  const exe = os === 'win32' ? '.exe' : '';
  for (const b of BINARIES) {
    const dest = path.join(dir, 'bin', `${b}${exe}`);
    fs.copyFileSync(path.join(binDir, `${b}${exe}`), dest);
    fs.chmodSync(dest, 0o755);
  }
  fs.copyFileSync(path.join(root, 'LICENSE'), path.join(dir, 'LICENSE'));
  fs.writeFileSync(
    path.join(dir, 'README.md'),
    `# ${SCOPE}/fake-gemini-${platform}\n\nThe ${platform} binaries of the npm package ` +
      'fake-gemini; install that one, not this.\n',
  );
  writeJson(path.join(dir, 'package.json'), {
    name: `${SCOPE}/fake-gemini-${platform}`,
    ...common(version),
    description: `The ${platform} binaries of fake-gemini and gemini-mcp-conformance`,
    os: [os],
    cpu: [cpu],
    ...(os === 'linux' ? { libc: ['glibc'] } : {}),
    files: ['bin', 'README.md', 'LICENSE'],
    preferUnplugged: true,
  });
  return dir;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const version = crateVersion('fake-gemini/Cargo.toml');
  const suite = crateVersion('conformance/Cargo.toml');
  if (suite !== version) {
    throw new Error(`fake-gemini is ${version} but gemini-mcp-conformance is ${suite}: one version per package`);
  }
  fs.mkdirSync(args.out, { recursive: true });
  const dirs = [mainPackage(args.out, version)];
  for (const p of args.platforms) dirs.push(platformPackage(args.out, version, p));
  for (const dir of dirs) {
    if (args.pack) {
      const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
      const file = execFileSync(npm, ['pack', '--silent', '--pack-destination', args.out], {
        cwd: dir,
        encoding: 'utf8',
        shell: process.platform === 'win32',
      }).trim();
      console.log(path.join(args.out, file));
    } else {
      console.log(dir);
    }
  }
}

try {
  main();
} catch (e) {
  console.error(`build.mjs: ${e.message}`);
  process.exit(2);
}
