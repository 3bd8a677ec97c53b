/**
 * The published build (`npm run build`): ESM JavaScript and declarations in dist/, one entry per
 * package export plus the CLI. Dependencies stay external. Run-time assets (Python runtime,
 * templates, discover.py, the GraphQL schema) ship beside dist/ and are found via core/_package.ts.
 */
import { defineConfig } from "tsdown";

export default defineConfig({
  entry: {
    index: "core/index.ts",
    types: "core/types.ts",
    testing: "testing/index.ts",
    cli: "cli/index.ts",
  },
  outDir: "dist",
  format: "esm",
  platform: "node",
  target: "node20.19",
  dts: true,
  sourcemap: false,
  clean: true,
});
