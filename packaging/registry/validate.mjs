#!/usr/bin/env node
// Validates server.json files against the MCP Registry's schema (server.schema.json beside this
// script, 2025-12-11) with ajv, and against the rules the registry applies at publish time that
// the schema leaves out: a package type it accepts, a pinned version, and for a bundle (mcpb) a
// release download URL with its SHA-256 and no registryBaseUrl.
//
//   node packaging/registry/validate.mjs --modules DIR FILE ...
//
// server.schema.json is the registry's own copy of the schema published for 2025-12-11
// (modelcontextprotocol/registry, internal/validators/schemas/2025-12-11.json), kept here so the
// check runs offline; moving to a newer schema replaces it and server.json's `$schema` together.
//
// DIR is a folder where `ajv` (8) and `ajv-formats` (3) are installed (`npm install ajv@8
// ajv-formats@3` in a scratch folder): the repository installs nothing itself. Prints one line
// per valid file; exits 1 naming every problem otherwise.

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The package types the registry publishes (the schema's `registryType` is a free string). */
const REGISTRY_TYPES = ['npm', 'pypi', 'oci', 'nuget', 'mcpb'];
const VERSION_RANGE = /[\^~<>=*\s]|(^|\.)[xX](\.|$)|^latest$/;

function parseArgs(argv) {
  const args = { modules: null, files: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--modules') args.modules = path.resolve(argv[++i] ?? '');
    else args.files.push(path.resolve(argv[i]));
  }
  if (!args.modules || args.files.length === 0) {
    throw new Error('usage: validate.mjs --modules DIR FILE ...');
  }
  return args;
}

/** What the registry would refuse in `server` that the schema lets through. */
function registryProblems(server) {
  const problems = [];
  if (VERSION_RANGE.test(server.version)) problems.push(`version ${server.version} is not one version`);
  for (const [i, p] of (server.packages ?? []).entries()) {
    const at = `packages[${i}] (${p.registryType} ${p.identifier})`;
    if (!REGISTRY_TYPES.includes(p.registryType)) {
      problems.push(`${at}: the registry takes ${REGISTRY_TYPES.join(', ')}`);
    }
    if (p.version !== undefined && VERSION_RANGE.test(p.version)) {
      problems.push(`${at}: version ${p.version} is not one version`);
    }
    if (p.registryType === 'mcpb') {
      if (!p.fileSha256) problems.push(`${at}: no fileSha256`);
      if (p.registryBaseUrl) problems.push(`${at}: an mcpb package has no registryBaseUrl`);
      if (!/^https:\/\/github\.com\/[^/]+\/[^/]+\/releases\/download\//.test(p.identifier)) {
        problems.push(`${at}: not a GitHub release download URL`);
      }
    }
  }
  return problems;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const require = createRequire(path.join(args.modules, 'node_modules', 'noop.js'));
  const Ajv = require('ajv');
  const addFormats = require('ajv-formats');
  const schema = JSON.parse(fs.readFileSync(path.join(here, 'server.schema.json'), 'utf8'));
  const ajv = new (Ajv.default ?? Ajv)({ allErrors: true, strict: false });
  (addFormats.default ?? addFormats)(ajv);
  const validate = ajv.compile(schema);
  let failed = false;
  for (const file of args.files) {
    const server = JSON.parse(fs.readFileSync(file, 'utf8'));
    const problems = validate(server)
      ? []
      : validate.errors.map((e) => `${e.instancePath || '/'} ${e.message}`);
    problems.push(...registryProblems(server));
    if (problems.length) {
      failed = true;
      console.error(`${file}: invalid`);
      for (const p of problems) console.error(`  ${p}`);
    } else {
      console.log(
        `${file}: valid (${schema.$id}; ${server.name} ${server.version}, ` +
          `${(server.packages ?? []).map((p) => p.registryType).join(', ')})`,
      );
    }
  }
  process.exit(failed ? 1 : 0);
}

try {
  main();
} catch (e) {
  console.error(`validate.mjs: ${e.message}`);
  process.exit(2);
}
