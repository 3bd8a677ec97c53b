/** File helpers of the built-in plugins. */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * Writes only when the content differs (creating the folder if needed); answers whether it wrote.
 * An unchanged file keeps its mtime, which the dev server relies on.
 */
export async function writeIfChanged(file: string, content: string): Promise<boolean> {
  const current = await readFile(file, "utf8").catch(() => undefined);
  if (current === content) return false;
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, content);
  return true;
}
