/**
 * The git commit an app is deployed from, and whether its folder had changes not committed (the
 * build's `.svc/` output aside): the platform's deploy history shows them (docs/platform.md,
 * "History and rollback"). Undefined outside a git repository or without git.
 */
import { execFile } from "node:child_process";

const git = (root: string, args: string[]) =>
  new Promise<string | undefined>((resolve) => {
    execFile("git", ["-C", root, ...args], { timeout: 10_000 }, (error, stdout) => resolve(error ? undefined : stdout.trim()));
  });

export async function gitSource(root: string): Promise<{ commit: string; dirty: boolean } | undefined> {
  const commit = await git(root, ["rev-parse", "HEAD"]);
  if (!commit) return undefined;
  const status = await git(root, ["status", "--porcelain", "--", ".", ":(exclude).svc"]);
  return { commit, dirty: status === undefined || status !== "" };
}
