/**
 * A promise that settles once: through `run`'s resolve or reject, or after `timeoutMs` with "<label> did not finish
 * within N s", once `onTimeout` has freed what `run` holds (a stream, a socket). Later calls of either are ignored,
 * since a stream's `end`, `close` and `error` may all arrive. Both hosts' exec calls need exactly this.
 */
export function settleWithin<T>(
  label: string,
  timeoutMs: number,
  onTimeout: () => void,
  run: (resolve: (value: T) => void, reject: (error: unknown) => void) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const once =
      <A>(fn: (value: A) => void) =>
      (value: A) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        fn(value);
      };
    const timer = setTimeout(() => {
      onTimeout();
      once(reject)(new Error(`${label} did not finish within ${Math.round(timeoutMs / 1000)} s`));
    }, timeoutMs);
    run(once(resolve), once(reject));
  });
}
