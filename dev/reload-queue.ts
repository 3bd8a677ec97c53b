/**
 * Reloads run one at a time: files that change during a reload are batched into the next one
 * (docs/dev-server.md, "Reload"). Once closed, a queued batch does not run; it answers the last report.
 */
export function createReloadQueue<Report>(reload: (files: string[]) => Promise<Report>) {
  let running: Promise<Report> | undefined;
  let queued: Set<string> | undefined;
  let queuedRun: Promise<Report> | undefined;
  let last: Report | undefined;
  let closing = false;
  const waiters: Array<(report: Report) => void> = [];

  function schedule(files: string[]): Promise<Report> {
    if (running) {
      queued ??= new Set();
      for (const file of files) queued.add(file);
      queuedRun ??= running.then(() => {
        const next = [...(queued ?? [])].sort();
        queued = undefined;
        queuedRun = undefined;
        return closing ? last! : schedule(next);
      });
      return queuedRun;
    }
    running = reload(files)
      .then((report) => {
        last = report;
        for (const resolve of waiters.splice(0)) resolve(report);
        return report;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  return {
    schedule,
    /** The last finished reload's report, if any. */
    last: (): Report | undefined => last,
    /** Resolves with the next reload's report (tests). */
    next: () => new Promise<Report>((resolve) => waiters.push(resolve)),
    /** No queued batch runs after this; resolves once the running reload is done. */
    async close(): Promise<void> {
      closing = true;
      await running?.catch(() => {});
    },
  };
}
export type ReloadQueue<Report> = ReturnType<typeof createReloadQueue<Report>>;
