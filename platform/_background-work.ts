/**
 * Work the platform starts and does not wait for, but whose end its close must wait for: it writes
 * into the state folder (a build unpacked ahead, the runtime's bytecode) or frees what the host holds
 * (an exited worker's network namespace and cgroup). Its outcome is nobody's to see here: whoever
 * needs the result asks for it again (a build's unpack is shared, see ./_shared-attempt.ts).
 */
export class BackgroundWork {
  private readonly running = new Set<Promise<void>>();

  add(work: Promise<unknown>): void {
    const ended = work.then(
      () => undefined,
      () => undefined,
    );
    this.running.add(ended);
    void ended.finally(() => this.running.delete(ended));
  }

  /** Resolves once everything added so far has ended. */
  async settled(): Promise<void> {
    await Promise.all(this.running);
  }
}
