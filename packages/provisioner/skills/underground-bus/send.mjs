// Source of the `underground-bus` skill's script: sends one signed message to the underground bus
// (spec §4.11 `POST /api/underground/bus/send`). `scripts/build-skills.mjs` bundles it with @noble/curves and
// @noble/hashes into one file that runs on plain Node >= 20 without node_modules (the agent's runtime has neither a
// keccak-256 nor a secp256k1 library). The signature is what viem's `signMessage` makes: EIP-191 personal_sign
// (keccak-256 of "\x19Ethereum Signed Message:\n" + byte length + text), secp256k1 with low s, r || s || 27 + recovery.
import { randomUUID } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1';
import { keccak_256 } from '@noble/hashes/sha3';
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from '@noble/hashes/utils';

const USAGE = `Usage: node send.mjs --action ACTION [--to AGENT_ID] [--payload JSON] [--message-id ID]

Signs a message with this agent's wallet (AOP_AGENT_WALLET_KEY) and sends it to the underground bus
(AOP_AGENT_BUS_URL). fromAgentId is AOP_AGENT_ID when set. Prints the bus's JSON answer.
Exit codes: 0 accepted, 1 refused by the bus, 2 bad arguments or environment, 3 bus unreachable.`;

class UsageError extends Error {}

/** Same bytes as the backend's `canonicalJson`: keys sorted by UTF-16 code units, recursively, no whitespace. */
function canonicalJson(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.keys(value)
    .filter((k) => value[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`);
  return `{${entries.join(',')}}`;
}

/** EIP-191 personal_sign of `text` with a 32-byte private key: 0x + r (32) + s (32) + v (27 or 28). */
function personalSign(text, privateKey) {
  const body = utf8ToBytes(text);
  const digest = keccak_256(concatBytes(utf8ToBytes(`\x19Ethereum Signed Message:\n${body.length}`), body));
  const signature = secp256k1.sign(digest, privateKey, { lowS: true });
  return `0x${bytesToHex(signature.toCompactRawBytes())}${(27 + signature.recovery).toString(16)}`;
}

function parseArgs(argv) {
  const options = {};
  const names = { '--action': 'action', '--to': 'to', '--payload': 'payload', '--message-id': 'messageId' };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') return { help: true };
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const name = names[flag];
    if (!name) throw new UsageError(`Unknown argument: ${flag}`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`${flag} needs a value`);
    options[name] = value;
  }
  return options;
}

function requiredEnv(name, env) {
  const value = env[name];
  if (!value) {
    throw new UsageError(
      `${name} is not set: this agent has no underground wallet in its runtime (create one with POST /api/underground/wallets, then repair the agent)`,
    );
  }
  return value;
}

function buildMessage(options, env) {
  if (!options.action) throw new UsageError('--action is required');
  const message = { messageId: options.messageId ?? `msg-${randomUUID()}`, action: options.action };
  if (env.AOP_AGENT_ID) message.fromAgentId = env.AOP_AGENT_ID;
  if (options.to) message.toAgentId = options.to;
  if (options.payload !== undefined) {
    try {
      message.payload = JSON.parse(options.payload);
    } catch {
      throw new UsageError('--payload must be JSON, e.g. --payload \'{"text":"hello"}\'');
    }
  }
  return message;
}

async function main(argv, env) {
  const options = parseArgs(argv);
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const keyText = requiredEnv('AOP_AGENT_WALLET_KEY', env);
  const busUrl = requiredEnv('AOP_AGENT_BUS_URL', env);
  // The key itself never appears in a message: only its shape is described.
  if (!/^0x[0-9a-fA-F]{64}$/.test(keyText)) throw new UsageError('AOP_AGENT_WALLET_KEY must be 0x followed by 64 hex digits');
  let url;
  try {
    url = new URL(busUrl);
  } catch {
    throw new UsageError('AOP_AGENT_BUS_URL is not a URL');
  }
  const message = buildMessage(options, env);
  const signature = personalSign(canonicalJson(message), hexToBytes(keyText.slice(2)));
  let response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ ...message, signature }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    process.stderr.write(`The bus at ${url.origin} is unreachable: ${error?.cause?.code ?? error?.message ?? error}\n`);
    return 3;
  }
  const text = await response.text();
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    answer = { error: `HTTP ${response.status}: ${text.slice(0, 500)}` };
  }
  process.stdout.write(`${JSON.stringify({ status: response.status, messageId: message.messageId, ...answer })}\n`);
  return response.ok ? 0 : 1;
}

main(process.argv.slice(2), process.env).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`${error instanceof UsageError ? error.message : `send failed: ${error?.message ?? error}`}\n`);
    if (error instanceof UsageError) process.stderr.write(`${USAGE}\n`);
    process.exitCode = 2;
  },
);
