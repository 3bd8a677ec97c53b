/**
 * Test files share their process with the files run before and after them (vitest.config.ts,
 * `isolate: false`): a file that sets a variable puts it back as it found it.
 */

/** Remembers `names` as they are now; the answer puts them back (unset where they were unset). */
export function saveEnv(...names: string[]): () => void {
  const saved = names.map((name) => [name, process.env[name]] as const);
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}
