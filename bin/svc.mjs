#!/usr/bin/env node
// The svc command. In a source checkout (cli/index.ts beside this folder) it runs the TypeScript
// sources through tsx, a devDependency, so working on svc needs no build step and never runs a stale
// dist/; the published package has no sources and runs the built dist/cli.mjs with plain node.
// SVC_BUILT_CLI names a cli.mjs built from this checkout, run instead of the sources: the test
// suite builds one per run (test/_support/global-setup.ts), a third of the CPU of each command.
import { existsSync } from "node:fs";
import { pathToFileURL } from "node:url";

const sources = new URL("../cli/index.ts", import.meta.url);
if (process.env.SVC_BUILT_CLI) {
  await import(pathToFileURL(process.env.SVC_BUILT_CLI).href);
} else if (existsSync(sources)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(sources.href);
} else {
  await import("../dist/cli.mjs");
}
