/**
 * One attempt per key, shared: concurrent and later callers get the same promise, and a failed
 * attempt is forgotten so the next caller tries again (a build unpacked once, an interpreter
 * probed once).
 */
export function sharedAttempt<T>(attempts: Map<string, Promise<T>>, key: string, attempt: () => Promise<T>): Promise<T> {
  let promise = attempts.get(key);
  if (!promise) {
    promise = attempt();
    promise.catch(() => attempts.delete(key));
    attempts.set(key, promise);
  }
  return promise;
}
