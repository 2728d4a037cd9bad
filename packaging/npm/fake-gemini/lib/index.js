'use strict';
// Where this platform's binaries are: the package @geminicli-mcp/fake-gemini-<os>-<cpu> that npm
// installed as an optional dependency (only the one whose os and cpu match is installed).

const path = require('node:path');

/** The platforms a binary package exists for (`${process.platform}-${process.arch}`). */
const PLATFORMS = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64'];

/** The binaries each platform package carries. */
const BINARIES = ['fake-gemini', 'fake-gemini-api', 'gemini-mcp-conformance'];

/**
 * The absolute path of one of the binaries for this platform, e.g. to put in GEMINI_CLI_BIN so a
 * wrapper under test starts fake-gemini itself rather than through the Node launcher in bin/.
 * Throws with the reason when the platform has no package or its package is not installed.
 */
function binPath(name) {
  if (!BINARIES.includes(name)) {
    throw new Error(`fake-gemini: no binary ${name}; there are ${BINARIES.join(', ')}`);
  }
  const platform = `${process.platform}-${process.arch}`;
  if (!PLATFORMS.includes(platform)) {
    throw new Error(
      `fake-gemini: no prebuilt binaries for ${platform} (there are ${PLATFORMS.join(', ')}); ` +
        'build them with cargo from the geminicli-mcp workspace',
    );
  }
  const pkg = `@geminicli-mcp/fake-gemini-${platform}`;
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    throw new Error(
      `fake-gemini: the package ${pkg} is not installed; it is an optional dependency of ` +
        'fake-gemini, so reinstall without --omit=optional (or --no-optional)',
    );
  }
  const exe = process.platform === 'win32' ? `${name}.exe` : name;
  return path.join(dir, 'bin', exe);
}

module.exports = { binPath, BINARIES, PLATFORMS };
