#!/usr/bin/env node
// Assembles the npm packages from built binaries. Per product — `geminicli-mcp` (the server) and
// `fake-gemini` (the fake CLI, its scripted API and the conformance runner) — a main package (the
// launchers in bin/, optional dependencies on every platform package) and one package per
// platform given, `@geminicli-mcp/<product>-<platform>`, holding that platform's binaries.
//
//   node packaging/npm/build.mjs --out DIR [--pack] [--product NAME ...] [PLATFORM=BINDIR ...]
//
// PLATFORM is Node's `${process.platform}-${process.arch}` (linux-x64, linux-arm64, darwin-x64,
// darwin-arm64, win32-x64), or linux-x64-musl / linux-arm64-musl for static musl builds; BINDIR
// holds the products' binaries (.exe on Windows). --product limits the build to the products
// named (default: every product). Each product's packages take the version of its crates. With
// --pack, each package is packed into DIR with `npm pack` (`<product>-<version>.tgz` and
// `geminicli-mcp-<product>-<platform>-<version>.tgz`). Nothing is published.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');

/** The platforms a package is built for (lib/index.js reads the same list). */
const PLATFORMS = JSON.parse(fs.readFileSync(path.join(here, 'lib', 'platforms.json'), 'utf8'));
const SCOPE = '@geminicli-mcp';

/** What each product's packages hold and say. */
const PRODUCTS = {
  'geminicli-mcp': {
    crates: ['Cargo.toml'],
    binaries: ['geminicli-mcp'],
    // The MCP Registry's name for the server (server.json `name`): the registry accepts the npm
    // package only when its package.json says it.
    mcpName: 'io.github.geminicli-mcp/geminicli-mcp',
    description:
      "MCP server that lets any MCP client use Google's headless Gemini CLI as a supervised tool",
    keywords: ['mcp', 'mcp-server', 'gemini', 'gemini-cli', 'model-context-protocol'],
    platformDescription: (p) => `The ${p} binary of geminicli-mcp`,
  },
  'fake-gemini': {
    // Its folder in the repository (the server's is the root).
    folder: 'fake-gemini',
    crates: ['fake-gemini/Cargo.toml', 'conformance/Cargo.toml'],
    binaries: ['fake-gemini', 'fake-gemini-api', 'gemini-mcp-conformance'],
    description:
      "A scriptable stand-in for Google's Gemini CLI 0.61 and the gemini-mcp-conformance suite, for testing Gemini wrappers",
    keywords: ['gemini', 'gemini-cli', 'testing', 'fake', 'mcp', 'conformance'],
    platformDescription: (p) => `The ${p} binaries of fake-gemini and gemini-mcp-conformance`,
  },
};

/** The repository every package links to: the workspace's `repository` (Cargo.toml). */
function workspaceRepository() {
  const text = fs.readFileSync(path.join(root, 'Cargo.toml'), 'utf8');
  const table = text.split(/^\[/m).find((s) => s.startsWith('workspace.package]'));
  const m = table && table.match(/^repository\s*=\s*"([^"]+)"/m);
  if (!m) throw new Error('Cargo.toml: no [workspace.package] repository');
  return m[1];
}

/**
 * Where a product's package points on npm's page: the repository (with the product's folder, so
 * npm links its README), its README as the homepage and the issue tracker.
 */
function links(name) {
  const repo = workspaceRepository();
  const folder = PRODUCTS[name].folder;
  return {
    repository: { type: 'git', url: `git+${repo}.git`, ...(folder ? { directory: folder } : {}) },
    homepage: folder ? `${repo}/tree/main/${folder}#readme` : `${repo}#readme`,
    bugs: { url: `${repo}/issues` },
  };
}

function crateVersion(manifest) {
  const text = fs.readFileSync(path.join(root, manifest), 'utf8');
  const pkg = text.split(/^\[/m).find((s) => s.startsWith('package]'));
  const m = pkg && pkg.match(/^version\s*=\s*"([^"]+)"/m);
  if (!m) throw new Error(`${manifest}: no [package] version`);
  return m[1];
}

function parseArgs(argv) {
  const args = { out: null, pack: false, products: [], platforms: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--out') args.out = path.resolve(argv[++i] ?? '');
    else if (a === '--pack') args.pack = true;
    else if (a === '--product') {
      const name = argv[++i] ?? '';
      if (!PRODUCTS[name]) {
        throw new Error(`unknown product ${name}; known: ${Object.keys(PRODUCTS).join(', ')}`);
      }
      args.products.push(name);
    }
    else if (a.includes('=')) {
      const [platform, dir] = a.split(/=(.*)/s);
      if (!PLATFORMS.includes(platform)) {
        throw new Error(`unknown platform ${platform}; known: ${PLATFORMS.join(', ')}`);
      }
      args.platforms.push({ platform, dir: path.resolve(dir) });
    } else throw new Error(`unexpected argument ${a}`);
  }
  if (!args.out) {
    throw new Error('usage: build.mjs --out DIR [--pack] [--product NAME ...] [PLATFORM=BINDIR ...]');
  }
  if (args.products.length === 0) args.products = Object.keys(PRODUCTS);
  return args;
}

function writeJson(file, value) {
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function common(version) {
  return { version, license: 'MIT' };
}

function mainPackage(out, name, version) {
  const product = PRODUCTS[name];
  const dir = path.join(out, name);
  fs.cpSync(path.join(here, name), dir, { recursive: true });
  fs.cpSync(path.join(here, 'lib'), path.join(dir, 'lib'), { recursive: true });
  writeJson(path.join(dir, 'lib', 'product.json'), { name, binaries: product.binaries });
  fs.copyFileSync(path.join(root, 'LICENSE'), path.join(dir, 'LICENSE'));
  writeJson(path.join(dir, 'package.json'), {
    name,
    ...common(version),
    ...(product.mcpName ? { mcpName: product.mcpName } : {}),
    description: product.description,
    ...links(name),
    keywords: product.keywords,
    main: 'lib/index.js',
    bin: Object.fromEntries(product.binaries.map((b) => [b, `bin/${b}`])),
    files: ['bin', 'lib', 'README.md', 'LICENSE'],
    engines: { node: '>=18' },
    optionalDependencies: Object.fromEntries(
      PLATFORMS.map((p) => [`${SCOPE}/${name}-${p}`, version]),
    ),
  });
  return dir;
}

function platformPackage(out, name, version, { platform, dir: binDir }) {
  const product = PRODUCTS[name];
  const [os, cpu, libc] = platform.split('-');
  const dir = path.join(out, `${name}-${platform}`);
  fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
  const exe = os === 'win32' ? '.exe' : '';
  for (const b of product.binaries) {
    const from = path.join(binDir, `${b}${exe}`);
    if (!fs.existsSync(from)) {
      throw new Error(`${platform}: ${from} is missing (the ${name} packages need ${product.binaries.join(', ')})`);
    }
    const dest = path.join(dir, 'bin', `${b}${exe}`);
    fs.copyFileSync(from, dest);
    fs.chmodSync(dest, 0o755);
  }
  fs.copyFileSync(path.join(root, 'LICENSE'), path.join(dir, 'LICENSE'));
  fs.writeFileSync(
    path.join(dir, 'README.md'),
    `# ${SCOPE}/${name}-${platform}\n\nThe ${platform} binaries of the npm package ` +
      `${name}; install that one, not this.\n`,
  );
  writeJson(path.join(dir, 'package.json'), {
    name: `${SCOPE}/${name}-${platform}`,
    ...common(version),
    description: product.platformDescription(platform),
    ...links(name),
    os: [os],
    cpu: [cpu],
    ...(os === 'linux' ? { libc: [libc ?? 'glibc'] } : {}),
    files: ['bin', 'README.md', 'LICENSE'],
    preferUnplugged: true,
  });
  return dir;
}

/** The one version of a product's crates. */
function productVersion(name) {
  const [first, ...rest] = PRODUCTS[name].crates;
  const version = crateVersion(first);
  for (const manifest of rest) {
    const other = crateVersion(manifest);
    if (other !== version) {
      throw new Error(`${first} is ${version} but ${manifest} is ${other}: one version per package`);
    }
  }
  return version;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  fs.mkdirSync(args.out, { recursive: true });
  const dirs = [];
  for (const name of args.products) {
    const version = productVersion(name);
    dirs.push(mainPackage(args.out, name, version));
    for (const p of args.platforms) dirs.push(platformPackage(args.out, name, version, p));
  }
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
