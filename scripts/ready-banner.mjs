// `npm start`'s banner: printed once, when all three services answer their health checks — the backend included, as
// the web is of no use without it — instead of each service announcing itself on its own.

/**
 * Waits until every health URL of `checks` answers 2xx, then writes the banner (`rows()`: label and value pairs).
 * A service still not answering after `timeoutMs` is named instead; `stopped()` ends the wait (Ctrl-C meanwhile).
 */
export async function announceWhenReady({
  checks,
  rows,
  stopped = () => false,
  timeoutMs = 120_000,
  write = (text) => process.stdout.write(text),
}) {
  const waiting = new Set(Object.keys(checks));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const name of [...waiting]) {
      const res = await fetch(checks[name], { signal: AbortSignal.timeout(2_000) }).catch(() => null);
      if (res?.ok) waiting.delete(name);
    }
    if (stopped()) return false;
    if (waiting.size === 0) break;
    if (Date.now() > deadline) {
      write(`\nStill not answering after ${Math.round(timeoutMs / 1000)} s: ${[...waiting].join(', ')} (see the log above).\n\n`);
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const lines = [
    'The platform is ready.',
    '',
    ...(await rows()).map(([label, value]) => `${label.padEnd(11)}${value}`),
    '',
    'Ctrl-C stops all three.',
  ];
  write(`\n${lines.map((line) => `  ${line}`).join('\n')}\n\n`);
  return true;
}
