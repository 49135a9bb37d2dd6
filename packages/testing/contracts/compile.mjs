#!/usr/bin/env node
// Compiles the test contracts with solc (npm, wasm; no download) into artifacts.json,
// which the in-process test chain (src/fakes/chain.ts) deploys from.
//
//   node packages/testing/contracts/compile.mjs           regenerate artifacts.json
//   node packages/testing/contracts/compile.mjs --check   exit 1 when artifacts.json is stale
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const solc = require('solc');

const here = dirname(fileURLToPath(import.meta.url));
const artifactsPath = join(here, 'artifacts.json');
export const SOLC_VERSION = '0.8.37';
export const SETTINGS = { optimizer: { enabled: true, runs: 200 }, evmVersion: 'paris' };

/** Every contract of the `*.sol` files here: `{ compiler, settings, contracts: { Name: { abi, bytecode } } }`. */
export function compile() {
  const version = solc.version();
  if (!version.startsWith(`${SOLC_VERSION}+`)) throw new Error(`solc ${SOLC_VERSION} expected, found ${version}`);
  const files = readdirSync(here)
    .filter((f) => f.endsWith('.sol'))
    .sort();
  const sources = Object.fromEntries(files.map((f) => [f, { content: readFileSync(join(here, f), 'utf8') }]));
  const input = {
    language: 'Solidity',
    sources,
    settings: { ...SETTINGS, outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const contracts = {};
  for (const file of files) {
    for (const [name, c] of Object.entries(output.contracts[file] ?? {})) {
      contracts[name] = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
    }
  }
  return { compiler: `solc ${version}`, settings: SETTINGS, contracts };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const fresh = compile();
  if (process.argv.includes('--check')) {
    const committed = JSON.parse(readFileSync(artifactsPath, 'utf8'));
    if (JSON.stringify(committed) !== JSON.stringify(fresh)) {
      console.error('artifacts.json is stale: run node packages/testing/contracts/compile.mjs');
      process.exit(1);
    }
    console.log('artifacts.json matches the sources');
  } else {
    writeFileSync(artifactsPath, `${JSON.stringify(fresh, null, 2)}\n`);
    console.log(`wrote ${artifactsPath}: ${Object.keys(fresh.contracts).join(', ')}`);
  }
}
