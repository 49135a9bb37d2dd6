/**
 * A background queue worker for one process: one pass at a time; a kick during a pass makes it run once more; a pass
 * that reports more work due (a full batch after downtime) runs again at once. Passes never reject: failures go to
 * `onError` and the next kick or tick tries again.
 */
export interface BatchWorker {
  /** Runs a pass now (or once more after the running one); resolves when done. Never rejects. */
  kick(): Promise<void>;
  /** Runs a pass every `intervalMs` from now on (an unref'd timer). */
  start(intervalMs: number): void;
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
}

/** `pass` answers whether more work is due right away. */
export function createBatchWorker(pass: () => Promise<boolean>, onError: (err: unknown) => void): BatchWorker {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const kick = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          if (await pass()) again = true;
        } catch (err) {
          onError(err);
        }
      } while (again && !stopped);
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  return {
    kick,
    start(intervalMs) {
      if (timer || stopped) return;
      timer = setInterval(() => void kick(), intervalMs);
      timer.unref();
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
