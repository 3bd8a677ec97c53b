/**
 * The published build (`npm run build`, run by `npm pack`): ESM JavaScript and declarations in
 * dist/, one entry per package export plus the CLI. Run-time assets (Python runtime, templates,
 * the Python helper, the GraphQL schema) ship beside dist/ and are found via core/package-root.ts.
 * docs/architecture.md ("The published build").
 */
import { defineConfig, type UserConfig } from "tsdown";

/** The package's exports (`@svc-dev/svc`, `/types`, `/testing`): JavaScript and declarations. */
const EXPORTS = {
  index: "core/index.ts",
  types: "core/types.ts",
  testing: "testing/index.ts",
};

const shared: UserConfig = {
  entry: EXPORTS,
  outDir: "dist",
  format: "esm",
  platform: "node",
  target: "node20.19",
  sourcemap: false,
  // `npm run build` empties dist/ once; the two builds below write beside each other
  clean: false,
};

/**
 * JavaScript. Dependencies stay external but zod (its ESM is ~95 files, bundled it loads as one
 * tree-shaken chunk) and the three small libraries every build loads: tapable and ignore are
 * CommonJS, croner one file. Bundled, a nothing-changed `svc build` took 0.33 s of CPU instead of
 * 0.45 s and 9 MB less memory (farm-bench, paired, 30 runs; importing CommonJS from ESM starts
 * Node's CommonJS loader and its export lexer, which that build now never loads). Minified:
 * parsing the chunks is most of a nothing-changed build.
 * The CLI (bin/svc.mjs runs dist/cli.mjs) is an entry of this build only: nothing imports it.
 * The test suite builds this once per run for the CLI it starts (test/_support/global-setup.ts).
 */
export const javascript: UserConfig = {
  ...shared,
  entry: { ...EXPORTS, cli: "cli/index.ts" },
  dts: false,
  minify: true,
  deps: { alwaysBundle: ["zod", "tapable", "croner", "ignore"], onlyBundle: ["zod", "tapable", "croner", "ignore"] },
};

export default defineConfig([
  javascript,
  // Declarations of the exports, with every dependency (zod included) an import, as a consumer's tsc checks them.
  { ...shared, dts: { emitDtsOnly: true } },
]);
