// Checks a run of the official MCP conformance suite against its expected-failures file, over every
// scenario the run wrote results for: those the revision scores (which the suite checks as well)
// and those it runs without scoring (extensions such as tasks, pending scenarios), so that a check
// that passed cannot fail unseen in either. An entry is `scenario` (every failing check of it) or
// `scenario:check-id`, with its reason in a comment on its line; a check fails when its status is
// FAILURE or WARNING, as the suite counts them.
// Usage: node baseline.mjs RESULTS_DIR EXPECTED_FAILURES_YML. Exit 1 on a failing check no entry
// covers, on an entry nothing fails for (stale: remove it), or on an entry without its reason.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [resultsDir, listFile] = process.argv.slice(2);
if (!resultsDir || !listFile) {
  console.error('usage: node baseline.mjs RESULTS_DIR EXPECTED_FAILURES_YML');
  process.exit(2);
}

const problems = [];
const entries = [];
let inServer = false;
for (const [n, line] of readFileSync(listFile, 'utf8').split('\n').entries()) {
  if (/^\S/.test(line)) inServer = /^server:\s*(#.*)?$/.test(line);
  const item = line.match(/^\s+-\s+([^\s#]+)\s*(#\s*(.*))?$/);
  if (!inServer || !item) continue;
  const [scenario, check = null] = item[1].split(/:(.*)/s, 2);
  if (!item[3]?.trim()) problems.push(`${listFile}:${n + 1}: ${item[1]} names no reason`);
  entries.push({ scenario, check: check || null, text: item[1] });
}

const results = new Map();
for (const dir of readdirSync(resultsDir)) {
  const name = dir.match(/^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/)?.[1];
  if (!name) continue;
  results.set(name, JSON.parse(readFileSync(join(resultsDir, dir, 'checks.json'), 'utf8')));
}

const failing = (c) => c.status === 'FAILURE' || c.status === 'WARNING';
const covers = (e, scenario, id) => e.scenario === scenario && (e.check === null || e.check === id);
let passed = 0;
let expected = 0;
for (const [scenario, checks] of results) {
  for (const c of checks) {
    if (c.status === 'SUCCESS') passed += 1;
    if (!failing(c)) continue;
    if (entries.some((e) => covers(e, scenario, c.id))) {
      expected += 1;
    } else {
      problems.push(`unexpected failure: ${scenario}:${c.id} [${c.status}] ${c.errorMessage ?? ''}`);
    }
  }
}
for (const e of entries) {
  const checks = results.get(e.scenario);
  if (!checks) {
    problems.push(`stale entry: ${e.text} (the scenario did not run)`);
  } else if (!checks.some((c) => covers(e, e.scenario, c.id) && failing(c))) {
    problems.push(`stale entry: ${e.text} (nothing fails for it: remove it)`);
  }
}

console.log(
  `${results.size} scenarios: ${passed} checks passed, ${expected} failed as expected` +
    ` (${entries.length} entries), ${problems.length} problem(s)`,
);
for (const p of problems) console.log(`  ${p}`);
process.exit(problems.length > 0 ? 1 : 0);
