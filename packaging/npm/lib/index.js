'use strict';
// Where this platform's binaries are: the package @geminicli-mcp/<product>-<platform> that npm
// installed as an optional dependency (only those whose os, cpu and libc match are installed).
// The same file serves every product (fake-gemini, geminicli-mcp); product.json, written by
// packaging/npm/build.mjs, names the product and its binaries.

const path = require('node:path');
const product = require('./product.json');

/** The npm scope of the platform packages. */
const SCOPE = '@geminicli-mcp';

/**
 * The platforms a binary package exists for: Node's `${process.platform}-${process.arch}`, with
 * `-musl` for Linux builds linked statically against musl (they run on glibc systems too).
 */
const PLATFORMS = require('./platforms.json');

/** The binaries each platform package of this product carries. */
const BINARIES = product.binaries;

/** Whether this Linux runs on musl (no glibc version in Node's report: Alpine and the like). */
function isMusl() {
  if (process.platform !== 'linux') return false;
  try {
    return !process.report.getReport().header.glibcVersionRuntime;
  } catch {
    return false;
  }
}

/**
 * The platform packages that can serve this machine, best first: on Linux the one of its own libc,
 * then the other (a static musl build runs anywhere; a glibc one where glibc is).
 */
function candidates() {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform !== 'linux') return PLATFORMS.includes(base) ? [base] : [];
  const both = isMusl() ? [`${base}-musl`, base] : [base, `${base}-musl`];
  return both.filter((p) => PLATFORMS.includes(p));
}

/**
 * The absolute path of one of the binaries for this platform, e.g. to put in GEMINI_CLI_BIN so a
 * wrapper under test starts fake-gemini itself rather than through the Node launcher in bin/.
 * Throws with the reason when the platform has no package or its package is not installed.
 */
function binPath(name) {
  if (!BINARIES.includes(name)) {
    throw new Error(`${product.name}: no binary ${name}; there are ${BINARIES.join(', ')}`);
  }
  const platforms = candidates();
  if (platforms.length === 0) {
    throw new Error(
      `${product.name}: no prebuilt binaries for ${process.platform}-${process.arch} ` +
        `(there are ${PLATFORMS.join(', ')}); build them with cargo from the geminicli-mcp workspace`,
    );
  }
  const exe = process.platform === 'win32' ? `${name}.exe` : name;
  for (const platform of platforms) {
    let dir;
    try {
      dir = path.dirname(require.resolve(`${SCOPE}/${product.name}-${platform}/package.json`));
    } catch {
      continue;
    }
    return path.join(dir, 'bin', exe);
  }
  const wanted = platforms.map((p) => `${SCOPE}/${product.name}-${p}`).join(' or ');
  throw new Error(
    `${product.name}: the package ${wanted} is not installed; it is an optional dependency of ` +
      `${product.name}, so reinstall without --omit=optional (or --no-optional)`,
  );
}

module.exports = { binPath, BINARIES, PLATFORMS, SCOPE };
