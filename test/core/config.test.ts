import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defineConfig, DEFAULT_IMAGES, loadConfig, resolveConfig } from "../../core/config.ts";

const fixtures = join(import.meta.dirname, "../../fixtures/config");
const env = { command: "build", mode: "production" } as const;

describe("loadConfig", () => {
  it("loads svc.config.ts in function form, flattening plugin arrays and dropping false", async () => {
    const config = await loadConfig(join(fixtures, "function-form"), env);
    expect(config.app).toBe("config-production");
    expect(config.exclude).toEqual(["pandas"]);
    expect(config.images).toEqual({ gpu: "example/gpu:1", cpu: DEFAULT_IMAGES.cpu });
    expect(config.plugins.map((p) => p.name)).toEqual(["svc-plugin-stamp"]);
    expect(config.configFile).toMatch(/svc\.config\.ts$/);
  });

  it("fills defaults when there is no config file", async () => {
    const config = await loadConfig(join(fixtures, "..", "config"), env);
    expect(config).toMatchObject({ app: "config", pythonVersion: "3.11", maxArtifactBytes: 1.5e9, plugins: [] });
  });

  it("names every invalid field", async () => {
    const error = await loadConfig(join(fixtures, "invalid"), env).catch((e) => e);
    expect(error.code).toBe("CONFIG_INVALID");
    expect(error.message).toContain("app:");
    expect(error.message).toContain("maxArtifactBytes:");
  });

  it("resolves plugin package names from the app's node_modules", async () => {
    const config = await loadConfig(join(fixtures, "package-plugin"), env);
    expect(config.plugins.map((p) => p.name)).toEqual(["svc-plugin-hello"]);
  });

  it("hands a plugin package given as [name, options] its options", async () => {
    const config = await loadConfig(join(fixtures, "plugin-options"), env);
    expect(config.plugins.map((p) => p.name)).toEqual(["svc-plugin-greet-hej", "svc-plugin-greet-hello"]);
  });

  it("refuses options for a package whose default export is a plugin, not a function", async () => {
    const error = await resolveConfig(join(fixtures, "plugin-options"), { plugins: [["svc-plugin-plain", { x: 1 }]] }).catch((e) => e);
    expect(error.code).toBe("PLUGIN_INVALID");
  });

  it("compiles the config once: unchanged inputs reuse the cached module, an edit to a file it imports recompiles", async () => {
    const root = mkdtempSync(join(tmpdir(), "svc-config-cache-"));
    try {
      writeFileSync(join(root, "shared.ts"), `export const app: string = "first";\n`);
      writeFileSync(join(root, "svc.config.ts"), `import { app } from "./shared.ts";\nexport default { app };\n`);
      const inputs = join(root, ".svc", "cache", "config", "inputs.json");
      expect((await loadConfig(root, env)).app).toBe("first");
      const { key } = JSON.parse(readFileSync(inputs, "utf8")) as { key: string };
      const compiled = join(root, ".svc", "cache", "config", `${key}.mjs`);
      const written = statSync(compiled).mtimeMs;

      expect((await loadConfig(root, env)).app).toBe("first");
      expect(statSync(compiled).mtimeMs).toBe(written);

      writeFileSync(join(root, "shared.ts"), `export const app: string = "second";\n`);
      expect((await loadConfig(root, env)).app).toBe("second");
      expect(JSON.parse(readFileSync(inputs, "utf8")).key).not.toBe(key);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a config file that throws when loaded is CONFIG_LOAD_FAILED, naming the file and the cause", async () => {
    const root = mkdtempSync(join(tmpdir(), "svc-config-throws-"));
    try {
      writeFileSync(join(root, "svc.config.mjs"), `throw new Error("boom from the config");\n`);
      const error = await loadConfig(root, env).catch((e) => e);
      expect(error.code).toBe("CONFIG_LOAD_FAILED");
      expect(error.message).toContain("svc.config.mjs");
      expect(error.message).toContain("boom from the config");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("says how to install a plugin package that is missing", async () => {
    const error = await loadConfig(join(fixtures, "mjs"), env).catch((e) => e);
    expect(error.code).toBe("PLUGIN_NOT_FOUND");
    expect(error.message).toContain("npm install -D svc-plugin-missing");
  });

  it("rejects a plugin object without apply", async () => {
    const error = await resolveConfig("/tmp/x", { plugins: [{ name: "half" }] }).catch((e) => e);
    expect(error.code).toBe("CONFIG_INVALID");
    expect(error.message).toContain("plugins.0");
  });

  it("defineConfig is the identity (it exists for types)", () => {
    const config = { app: "x" };
    expect(defineConfig(config)).toBe(config);
  });
});
