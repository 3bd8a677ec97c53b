/**
 * `Promise.all(items.map(fn))` with at most `limit` calls in flight. Every item is tried even after
 * a failure, and the first error is thrown once all have settled: nothing is still running when the
 * caller sees the error (a deploy or a dev-server teardown must not leave saves or deletes behind).
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed: { error: unknown } | undefined;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index]!, index);
      } catch (error) {
        failed ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failed) throw failed.error;
  return results;
}
