/**
 * This checkout as users run it, for the benches: `npm pack` (its prepack builds dist/), unpacked
 * into a scratch folder with the checkout's node_modules linked beside it. Plain node, no tsx.
 */
import { execFileSync } from "node:child_process";
import { symlinkSync } from "node:fs";
import { join, resolve } from "node:path";

const REPO = resolve(import.meta.dirname, "../..");

/** Packs and unpacks the checkout under `dir`; answers the unpacked package's bin/svc.mjs. */
export function builtPackage(dir: string): string {
  const out = execFileSync("npm", ["pack", REPO, "--pack-destination", dir, "--json"], { cwd: REPO, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  const [packed] = JSON.parse(out.slice(out.indexOf("["))) as Array<{ filename: string }>;
  execFileSync("tar", ["-xzf", join(dir, packed!.filename), "-C", dir]);
  symlinkSync(join(REPO, "node_modules"), join(dir, "package", "node_modules"), "dir");
  return join(dir, "package", "bin", "svc.mjs");
}
