#!/usr/bin/env node
// The svc command. In a source checkout (cli/index.ts beside this folder) it runs the TypeScript
// sources through tsx, a devDependency, so working on svc needs no build step and never runs a stale
// dist/; the published package has no sources and runs the built dist/cli.mjs with plain node.
import { existsSync } from "node:fs";

const sources = new URL("../cli/index.ts", import.meta.url);
if (existsSync(sources)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(sources.href);
} else {
  await import("../dist/cli.mjs");
}
