/**
 * The real programs some tests drive (Prometheus, Jaeger), installed by scripts/setup.sh. A test
 * that needs one is skipped on a machine without it, except under CI=1, where it fails and says
 * how to get it: CI never passes by skipping what it was meant to run.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The first of `candidates` (absolute paths, or names looked up on PATH) that exists. */
export function findTool(candidates: Array<string | undefined>): string | undefined {
  const dirs = (process.env.PATH ?? "").split(delimiter).filter(Boolean);
  for (const c of candidates) {
    if (!c) continue;
    if (c.includes("/")) {
      if (existsSync(c)) return c;
    } else {
      const hit = dirs.map((d) => join(d, c)).find((p) => existsSync(p));
      if (hit) return hit;
    }
  }
  return undefined;
}

export const PROMETHEUS = findTool([process.env.PROMETHEUS_BIN, "prometheus"]);
/** setup.sh builds it into $HOME/go/bin (GOBIN). */
export const JAEGER = findTool([process.env.JAEGER_BIN, join(homedir(), "go", "bin", "jaeger"), "jaeger"]);

/** Skip when missing, but not under CI (there `requireTool` fails the suite). */
export const skipWithout = (tool: string | undefined): boolean => !tool && !process.env.CI;

/** The tool's path, or an error naming how to install it. */
export function requireTool(tool: string | undefined, name: string, how: string): string {
  if (!tool) throw new Error(`${name} is not installed, and this test needs it: ${how} (scripts/setup.sh does it).`);
  return tool;
}

/**
 * The type checker `npm run typecheck` runs (TypeScript 7, native), for the tests that compile what a
 * user would: generated clients, a consumer of the package. tsdown keeps TypeScript 5.9 for its API.
 */
export const TSC = fileURLToPath(new URL("../../node_modules/typescript-7/bin/tsc", import.meta.url));
