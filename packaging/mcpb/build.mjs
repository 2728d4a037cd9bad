#!/usr/bin/env node
// Assembles the MCP Bundles (.mcpb, Claude Desktop's one-click install) of the server from built
// binaries: one bundle per platform, since a bundle names one executable and cannot choose it by
// architecture. A bundle is a zip of manifest.json, server/geminicli-mcp[.exe], README.md and
// LICENSE; its manifest declares a `binary` server, its tools, and the settings Claude Desktop
// asks the user for (the API key, the allowed folder, the approval ceiling, the CLI to run),
// handed to the server as its environment variables.
//
//   node packaging/mcpb/build.mjs --out DIR [--tools-from BINARY] PLATFORM=BINDIR ...
//
// PLATFORM is Node's `${process.platform}-${process.arch}`: linux-x64, linux-arm64, darwin-x64,
// darwin-arm64 or win32-x64 (a glibc build serves Linux; the musl builds get no bundle). BINDIR
// holds geminicli-mcp (.exe on Windows). Writes DIR/geminicli-mcp-<version>-<platform>.mcpb,
// the version the root Cargo.toml's, and prints each path. The manifest's tools are those the
// server lists by default (its `core` set), asked of the server itself (`geminicli-mcp tools
// --json`): the bundled binary of the platform this runs on, or --tools-from's where none is.
// Only the standard library is used, and the same binary gives the same bytes (fixed entry
// times), so a bundle's SHA-256 can be checked against a rebuild.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');

const NAME = 'geminicli-mcp';
const PLATFORMS = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64'];

/**
 * The settings Claude Desktop asks for, and the variable each becomes. A setting the user leaves
 * empty must still yield a value the server understands (a client may pass an unset
 * `${user_config.X}` through unreplaced), so every optional one has a default, and the allowed
 * folder is a single directory: `mcp_config.env` values are strings, and a multiple selection
 * cannot be joined into one path list there.
 */
const USER_CONFIG = {
  gemini_api_key: {
    env: 'GEMINI_API_KEY',
    type: 'string',
    title: 'Gemini API key',
    description:
      'A Gemini API key from Google AI Studio (aistudio.google.com/apikey), handed to the Gemini CLI. ' +
      "The CLI's Google login is refused for individual accounts.",
    sensitive: true,
    required: true,
  },
  allowed_root: {
    env: 'GEMINICLI_MCP_ALLOWED_ROOTS',
    type: 'directory',
    title: 'Allowed folder',
    description:
      'The folder Gemini may work in: a call\'s workspace and include_directories must lie in it or ' +
      'below. Gemini can read and, within the approval mode, change files there.',
    required: true,
  },
  approval_mode: {
    env: 'GEMINICLI_MCP_APPROVAL_MODE',
    type: 'string',
    title: 'Approval ceiling',
    description:
      'The most a call may let Gemini do, and what a call that does not say gets: plan (read-only), ' +
      'default (changes refused), auto_edit (file edits, no shell) or yolo (edits and shell ' +
      'commands). Anything else means plan.',
    default: 'yolo',
    required: false,
  },
  gemini_cli: {
    env: 'GEMINI_CLI_BIN',
    type: 'string',
    title: 'Gemini CLI',
    description:
      'The gemini command to run (npm install -g @google/gemini-cli): its absolute path, since ' +
      'Claude Desktop may start servers with a short PATH (`which gemini` in a terminal prints it).',
    default: 'gemini',
    required: false,
  },
};

/**
 * The field `key` of the root Cargo.toml's [package] (a string or an array of strings), or of its
 * [workspace.package] where the package inherits it.
 */
function cargoField(key) {
  const text = fs.readFileSync(path.join(root, 'Cargo.toml'), 'utf8');
  const sections = text.split(/^\[/m);
  for (const name of ['package]', 'workspace.package]']) {
    const section = sections.find((s) => s.startsWith(name)) ?? '';
    const m = section.match(new RegExp(`^${key}\\s*=\\s*(".*"|\\[.*\\])\\s*$`, 'm'));
    if (m) return JSON.parse(m[1]);
  }
  throw new Error(`Cargo.toml: no [package] or [workspace.package] ${key}`);
}

function parseArgs(argv) {
  const args = { out: null, toolsFrom: null, platforms: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--out') args.out = path.resolve(argv[++i] ?? '');
    else if (a === '--tools-from') args.toolsFrom = path.resolve(argv[++i] ?? '');
    else if (a.includes('=')) {
      const [platform, dir] = a.split(/=(.*)/s);
      if (!PLATFORMS.includes(platform)) {
        throw new Error(`unknown platform ${platform}; known: ${PLATFORMS.join(', ')}`);
      }
      args.platforms.push({ platform, dir: path.resolve(dir) });
    } else throw new Error(`unexpected argument ${a}`);
  }
  if (!args.out || args.platforms.length === 0) {
    throw new Error('usage: build.mjs --out DIR [--tools-from BINARY] PLATFORM=BINDIR ...');
  }
  return args;
}

/**
 * What Claude Desktop shows for each tool: the tools the server lists by default (its `core` set,
 * the tool sets the user turns on being beyond a bundle's fixed list), as `binary` declares them.
 */
function defaultTools(binary) {
  const out = execFileSync(binary, ['tools', '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const tools = JSON.parse(out).tools
    .filter((t) => t.toolset === 'core')
    .map(({ name, description }) => ({ name, description }));
  if (tools.length === 0) throw new Error(`${binary} tools --json: no tool in the core set`);
  return tools;
}

/** The binary whose tool list the bundles declare: --tools-from, else this platform's. */
function lister(args) {
  if (args.toolsFrom) return args.toolsFrom;
  const here = args.platforms.find((p) => p.platform === `${process.platform}-${process.arch}`);
  if (!here) {
    throw new Error(
      `no bundle for ${process.platform}-${process.arch}, whose server could list the tools: ` +
        'name a binary that runs here with --tools-from',
    );
  }
  return path.join(here.dir, `${NAME}${process.platform === 'win32' ? '.exe' : ''}`);
}

/** The manifest of `platform`'s bundle (MCPB manifest 0.3), declaring `tools`. */
function manifest(platform, tools) {
  const version = cargoField('version');
  const repository = cargoField('repository');
  const [os] = platform.split('-');
  const exe = os === 'win32' ? '.exe' : '';
  return {
    manifest_version: '0.3',
    name: NAME,
    display_name: 'Gemini CLI (geminicli-mcp)',
    version,
    description: cargoField('description'),
    long_description:
      "Runs Google's Gemini CLI headless, one supervised process per call, and returns its answer " +
      'as an MCP tool result. The Gemini CLI itself is not in the bundle: install it with ' +
      '`npm install -g @google/gemini-cli` (0.40.0 or newer) and give its path below if Claude ' +
      'Desktop does not find it.',
    author: { name: 'The geminicli-mcp authors', url: repository },
    repository: { type: 'git', url: repository },
    homepage: cargoField('homepage'),
    documentation: `${repository}/blob/main/docs/install.md`,
    support: `${repository}/issues`,
    server: {
      type: 'binary',
      entry_point: `server/${NAME}${exe}`,
      mcp_config: {
        // Claude Desktop appends .exe on Windows.
        command: `\${__dirname}/server/${NAME}`,
        args: [],
        env: Object.fromEntries(
          Object.entries(USER_CONFIG).map(([key, c]) => [c.env, `\${user_config.${key}}`]),
        ),
      },
    },
    tools,
    tools_generated: false,
    keywords: cargoField('keywords'),
    license: cargoField('license'),
    // The prompts and the files Gemini reads go to Google's Gemini API.
    privacy_policies: ['https://policies.google.com/privacy'],
    compatibility: { platforms: [os] },
    user_config: Object.fromEntries(
      Object.entries(USER_CONFIG).map(([key, { env: _, ...c }]) => [key, c]),
    ),
  };
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data) {
  let c = 0xffffffff;
  for (const b of data) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * A zip archive of `entries` ({name, data, mode}), deflated, every entry dated 1980-01-01 and
 * marked as made on Unix with its mode, so an unpacker restores the binary's execute bit.
 */
function zip(entries) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  const DOS_DATE = (0 << 9) | (1 << 5) | 1; // 1980-01-01
  for (const { name, data, mode } of entries) {
    const nameBytes = Buffer.from(name, 'utf8');
    const packed = zlib.deflateRawSync(data, { level: 9 });
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed: deflate
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt16LE(0, 10);
    local.writeUInt16LE(DOS_DATE, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by: Unix, zip 2.0
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt16LE(0, 12);
    central.writeUInt16LE(DOS_DATE, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt16LE(0, 30); // extra
    central.writeUInt16LE(0, 32); // comment
    central.writeUInt16LE(0, 34); // disk
    central.writeUInt16LE(0, 36); // internal attributes
    central.writeUInt32LE(((0o100000 | mode) << 16) >>> 0, 38); // a regular file and its mode
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, packed);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + packed.length;
  }
  if (offset > 0xffffffff) throw new Error('bundle over 4 GiB: zip64 is not written');
  const centralSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}

function bundle(out, tools, { platform, dir }) {
  const m = manifest(platform, tools);
  const binary = path.join(dir, path.basename(m.server.entry_point));
  if (!fs.existsSync(binary)) throw new Error(`${platform}: ${binary} is missing`);
  const file = path.join(out, `${NAME}-${m.version}-${platform}.mcpb`);
  fs.writeFileSync(
    file,
    zip([
      { name: 'manifest.json', data: Buffer.from(`${JSON.stringify(m, null, 2)}\n`), mode: 0o644 },
      { name: m.server.entry_point, data: fs.readFileSync(binary), mode: 0o755 },
      { name: 'README.md', data: fs.readFileSync(path.join(root, 'README.md')), mode: 0o644 },
      { name: 'LICENSE', data: fs.readFileSync(path.join(root, 'LICENSE')), mode: 0o644 },
    ]),
  );
  return file;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  fs.mkdirSync(args.out, { recursive: true });
  const tools = defaultTools(lister(args));
  for (const p of args.platforms) console.log(bundle(args.out, tools, p));
}

try {
  main();
} catch (e) {
  console.error(`build.mjs: ${e.message}`);
  process.exit(2);
}
