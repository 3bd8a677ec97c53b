/**
 * The published package as a user gets it: `npm pack` (which builds dist/ with tsdown), installed
 * from the tarball into a temporary project with plain npm, then used with no TypeScript loader:
 * node imports, a strict TypeScript plugin under node16 and bundler resolution, `npx svc init` and
 * `npx svc build`, and the third-party examples/svc-plugin-secrets from its own tarball, with options.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TSC } from "../_support/tools.ts";

const run = promisify(execFile);
const REPO = resolve(import.meta.dirname, "../..");
/** A fake AWS key id (the documented example): the secrets plugin must refuse it. */
const FAKE_AWS_KEY = "AKIAIOSFODNN7EXAMPLE";

let tmp: string;
let project: string;
let svcTarball: string;
let installLog: string;

/** The child's environment without the npm_* variables of a surrounding `npm test`. */
const cleanEnv = (): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("npm_"))),
  NO_COLOR: "1",
});

async function sh(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = cleanEnv()) {
  return run(file, args, { cwd, env, maxBuffer: 64 << 20, timeout: 240_000 });
}

/** `npx svc …` in `cwd`; resolves with exit code and output instead of throwing. */
async function svc(args: string[], cwd: string, env?: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await sh("npx", ["--no-install", "svc", ...args], cwd, env);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === "number" ? failed.code : 1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

/** `npm pack <dir>` into tmp; answers the tarball path. */
async function pack(dir: string): Promise<string> {
  const { stdout } = await sh("npm", ["pack", dir, "--pack-destination", tmp, "--json"], REPO);
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf("["))) as Array<{ filename: string }>;
  return join(tmp, packed!.filename);
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "svc-package-"));
  svcTarball = await pack("./");
  const pluginTarball = await pack("./examples/svc-plugin-secrets");
  project = join(tmp, "project");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  // Scripts off: nothing here needs better-sqlite3's native build (the embedded platform is not started).
  const { stdout, stderr } = await sh(
    "npm",
    ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel", "warn", svcTarball, pluginTarball, "@types/node@20.19.43"],
    project,
  );
  installLog = stdout + stderr;
}, 300_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("the packed tarball", () => {
  it("holds the build, the declarations and the run-time assets, not the repository's tests, fixtures or benches", async () => {
    const { stdout } = await sh("tar", ["-tzf", svcTarball], tmp);
    const files = stdout
      .split("\n")
      .filter(Boolean)
      .map((line) => line.replace(/^package\//, ""));
    for (const needed of [
      "dist/index.mjs",
      "dist/index.d.mts",
      "dist/types.d.mts",
      "dist/testing.mjs",
      "dist/testing.d.mts",
      "dist/cli.mjs",
      "bin/svc.mjs",
      "runtime/python/svc/__init__.py",
      "runtime/python/pyproject.toml",
      "runtime/python/_svc_build.py", // its build backend: pip install leaves nothing in node_modules
      "plugins/_python/helper/__main__.py",
      "plugins/_python/helper/requirements.py",
      "platform/graphql/schema.graphql",
      "dist/console/index.html", // the console's page and bundle (scripts/build-console.ts): the package has no ui/ sources to build
      "dist/console/console.js",
      "dist/console/console.css",
      "templates/init/svc.config.ts",
      "docs/contracts.md", // remedies point at the docs shipped here (core/errors.ts docRef)
      "docs/platform.md",
    ]) {
      expect(files).toContain(needed);
    }
    expect(files.filter((file) => /^(test|fixtures|bench|examples|core|cli|plugins\/.*\.ts$|runtime\/python\/tests)/.test(file))).toEqual([]);
    expect(files).toContain("LICENSE");
    expect(files).not.toContain("CONTRIBUTING.md"); // the repository's guide; README.md is the package's page
    // declarations for the three exports only (the CLI has none to give)
    expect(files.filter((file) => /^dist\/[a-z]+\.d\.mts$/.test(file)).sort()).toEqual(["dist/index.d.mts", "dist/testing.d.mts", "dist/types.d.mts"]);
  });

  it("is clean for publint and for attw's esm-only profile", async () => {
    const bin = (name: string) => join(REPO, "node_modules", ".bin", name);
    const publint = await sh(bin("publint"), [svcTarball], tmp);
    expect(publint.stdout).toContain("All good!");
    // attw exits non-zero on any problem the profile does not ignore
    const attw = await sh(bin("attw"), [svcTarball, "--profile", "esm-only", "--format", "ascii"], tmp);
    expect(attw.stdout).toContain("@svc-dev/svc");
  }, 120_000);

  it("installs on this Node with no engine warning, and without tsx", () => {
    expect(installLog).not.toMatch(/EBADENGINE/);
    expect(existsSync(join(project, "node_modules", "@svc-dev", "svc", "dist", "index.mjs"))).toBe(true);
    expect(existsSync(join(project, "node_modules", "tsx"))).toBe(false);
  });
});

describe("using the installed package", () => {
  it("imports svc, svc/types and svc/testing from plain node, with no loader", async () => {
    const script = `
      const svc = await import("@svc-dev/svc");
      const testing = await import("@svc-dev/svc/testing");
      await import("@svc-dev/svc/types");
      console.log(JSON.stringify({
        definePlugin: typeof svc.definePlugin,
        runPipeline: typeof svc.runPipeline,
        order: svc.HOOK_ORDER,
        buildFolder: typeof testing.buildFolder,
        builtins: testing.builtinPlugins().map((p) => p.name).slice(0, 3),
      }));`;
    const { stdout } = await sh(process.execPath, ["--input-type=module", "-e", script], project);
    expect(JSON.parse(stdout)).toEqual({
      definePlugin: "function",
      runPipeline: "function",
      order: { FIRST: -100, BEFORE_BUILTINS: -10, BUILTIN: 0, AFTER_BUILTINS: 10, LAST: 100 },
      buildFolder: "function",
      builtins: ["svc:discover-stock-worker", "svc:discover-python", "svc:group-endpoints"], // the stock worker's discovery taps first
    });
  });

  it("type-checks a strict TypeScript plugin under moduleResolution node16 and bundler", async () => {
    const dir = join(project, "ts-plugin");
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "plugin.ts"),
      `import { definePlugin, HOOK_ORDER, type SvcPlugin } from "@svc-dev/svc";
import type { BuildContext } from "@svc-dev/svc/types";
import { buildFolder } from "@svc-dev/svc/testing";

declare module "@svc-dev/svc/types" {
  interface PluginMeta {
    "svc-plugin-count": { files: number };
  }
}

export const count = definePlugin((options: { min: number }): SvcPlugin => ({
  name: "svc-plugin-count",
  apply(pipeline) {
    pipeline.hooks.pack.tapPromise({ name: "svc-plugin-count", stage: HOOK_ORDER.AFTER_BUILTINS }, async (artifact, ctx: BuildContext) => {
      ctx.meta.set("svc-plugin-count", { files: Math.max(options.min, ctx.sourceFiles.length) });
      const files: number | undefined = ctx.meta.get("svc-plugin-count")?.files;
      // @ts-expect-error the channel is typed: a declared key takes only its declared shape
      ctx.meta.set("svc-plugin-count", { files: "many" });
      ctx.logger.info(\`\${files} files\`);
      return artifact;
    });
  },
}));

export const check = (root: string) => buildFolder(root, { until: "manifest", plugins: [count({ min: 1 })] });
`,
    );
    // node16 also checks svc's own declarations (skipLibCheck off, as a strict consumer may set it)
    for (const [name, module, moduleResolution, skipLibCheck] of [
      ["node16", "node16", "node16", false],
      ["bundler", "esnext", "bundler", true],
    ] as const) {
      const tsconfig = join(dir, `tsconfig.${name}.json`);
      writeFileSync(
        tsconfig,
        JSON.stringify({
          compilerOptions: { strict: true, noEmit: true, target: "es2022", module, moduleResolution, skipLibCheck, types: ["node"] },
          files: ["plugin.ts"],
        }),
      );
      const result = await sh(process.execPath, [TSC, "-p", tsconfig], dir).catch((error: { stdout: string }) => error);
      expect(result.stdout, `tsc with moduleResolution ${moduleResolution}`).toBe("");
    }
  }, 240_000);

  it("runs npx svc init and npx svc build, and prints its own version", async () => {
    const init = await svc(["init", "my-app"], project);
    expect(init.code, init.stderr).toBe(0);
    const app = join(project, "my-app");
    const build = await svc(["build", "--json"], app);
    expect(build.code, build.stderr).toBe(0);
    const result = JSON.parse(build.stdout) as { ok: boolean; artifact: { path: string; files: number }; endpoints: Array<{ name: string }> };
    expect(result.ok).toBe(true);
    expect(existsSync(result.artifact.path)).toBe(true);
    expect(result.endpoints.length).toBeGreaterThan(0);

    // npx sets npm_package_version to the consumer's version: svc must print its own.
    const own = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string };
    const version = await svc(["--version"], app, { ...cleanEnv(), npm_package_version: "9.9.9" });
    expect(version.stdout).toContain(`svc/${own.version} `);
  }, 180_000);

  it("loads svc-plugin-secrets by name with options, and reports its refusal as the plugin's verdict (PLUGIN_REFUSED with its code and remedy), naming file and line", async () => {
    const app = join(project, "secrets-app");
    expect((await svc(["init", "secrets-app"], project)).code).toBe(0);
    writeFileSync(
      join(app, "svc.config.ts"),
      `import { defineConfig } from "@svc-dev/svc";\n\nexport default defineConfig({\n  plugins: [["svc-plugin-secrets", { allow: ["workers/fake_keys.py"] }]],\n});\n`,
    );
    writeFileSync(join(app, "workers", "fake_keys.py"), `KEY = "-----BEGIN RSA PRIVATE KEY-----"\n`);
    writeFileSync(join(app, "workers", "settings.py"), `REGION = "eu-west-1"\nACCESS_KEY_ID = "${FAKE_AWS_KEY}"\n`);

    const refused = await svc(["build", "--no-deps", "--json"], app);
    expect(refused.code).toBe(1);
    const { error } = JSON.parse(refused.stdout) as {
      error: { code: string; plugin: string; hook: string; pluginCode: string; message: string; remedy: string };
    };
    expect(error).toMatchObject({ code: "PLUGIN_REFUSED", plugin: "svc-plugin-secrets", hook: "pack", pluginCode: "SECRET_FOUND" });
    expect(error.remedy).toContain("Read them from environment variables at run time instead");
    expect(error.remedy).not.toContain("report it to its author");
    expect(error.message).toContain("workers/settings.py:2: an AWS access key id");
    // the allow option reached the plugin: the allowed file is not reported
    expect(error.message).not.toContain("fake_keys.py");
    expect(existsSync(join(app, ".svc", "artifact.tar.gz"))).toBe(false);

    writeFileSync(join(app, "workers", "settings.py"), `REGION = "eu-west-1"\n`);
    const built = await svc(["build", "--no-deps", "--json"], app);
    expect(built.code, built.stdout + built.stderr).toBe(0);

    // a typo in its options: the plugin's zod schema names the key it probably meant
    writeFileSync(
      join(app, "svc.config.ts"),
      `import { defineConfig } from "@svc-dev/svc";\n\nexport default defineConfig({\n  plugins: [["svc-plugin-secrets", { alow: [] }]],\n});\n`,
    );
    const typo = await svc(["build", "--no-deps"], app);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain("[PLUGIN_OPTIONS_INVALID]");
    expect(typo.stderr).toContain('unknown option "alow" (did you mean "allow"?)');
  });

  it("points a plugin error from svc.config.ts at the config's own line", async () => {
    const app = join(project, "throwing-app");
    expect((await svc(["init", "throwing-app"], project)).code).toBe(0);
    writeFileSync(
      join(app, "svc.config.ts"),
      [
        `import { defineConfig, definePlugin } from "@svc-dev/svc";`,
        ``,
        `const exploding = definePlugin({`,
        `  name: "svc-plugin-exploding",`,
        `  apply(pipeline) {`,
        `    pipeline.hooks.group.tap("svc-plugin-exploding", () => {`,
        `      throw Object.assign(new Error("plugin exploded"), { code: "BOOM" });`,
        `    });`,
        `  },`,
        `});`,
        ``,
        `export default defineConfig({ plugins: [exploding] });`,
        ``,
      ].join("\n"),
    );
    const failed = await svc(["build", "--no-deps"], app);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain(`[PLUGIN_ERROR] Plugin "svc-plugin-exploding" failed in hook "group": plugin exploded [BOOM]`);
    expect(failed.stderr).toMatch(/at .*throwing-app\/svc\.config\.ts:7:\d+/);
  });
});
