/**
 * `svc build` with nothing changed answers from the last build's record (core/build-record.ts), and
 * any change to what the build read, to its flags or to the environment it depended on builds again.
 * Real builds through the command line; each case has its own copy of the app, all made together and
 * aged past the racy window once, so that every first build records.
 */
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { beforeAll, describe, expect, it } from "vitest";
import { runSvc } from "../_support/cli.ts";
import { copyFixture } from "../plugins/_helpers.ts";

/** What a change to the app does after the build that records. */
const CASES = {
  unchanged: () => {},
  editedSource: (app: string) =>
    writeFileSync(join(app, "workers/cpu.py"), readFileSync(join(app, "workers/cpu.py"), "utf8").replace("hello {name}", "hi {name}")),
  addedSource: (app: string) => writeFileSync(join(app, "workers/extra.py"), "X = 1\n"),
  addedRootFile: (app: string) => writeFileSync(join(app, "extra.py"), "X = 1\n"),
  editedRequirements: (app: string) => appendFileSync(join(app, "requirements.txt"), "humanize==4.12.3\n"),
  editedIgnoreFile: (app: string) => writeFileSync(join(app, ".svcignore"), "data/\n"),
  upgradedNpmPackage: (app: string) => writeFileSync(join(app, "package-lock.json"), '{ "lockfileVersion": 3 }\n'),
  removedArtifact: (app: string) => rmSync(join(app, ".svc/artifact.tar.gz")),
  configEnv: () => {},
  configListsEnv: () => {},
  installerEnv: () => {},
  otherFlags: () => {},
  force: () => {},
  userPlugin: () => {},
  disabledPlugin: () => {},
} satisfies Record<string, (app: string) => void>;
type Case = keyof typeof CASES;

const apps = {} as Record<Case, string>;
const firstBuilds = {} as Record<Case, Built>;
const CONFIG_READING_ENV = 'export default { app: process.env.BUILD_RECORD_APP ?? "pack-app" };\n';
const CONFIG_LISTING_ENV = 'export default { app: Object.keys(process.env).some((name) => name.startsWith("BUILD_RECORD_X")) ? "x" : "pack-app" };\n';
const CONFIG_WITH_PLUGIN = 'export default { plugins: [{ name: "user-plugin", apply() {} }] };\n';
const CONFIG_DISABLING_PLUGIN = 'export default { disablePlugins: ["svc:check-imports"] };\n';

interface Built {
  upToDate: boolean;
  timings: Record<string, number>;
  artifact: { path: string; sha256: string; files: number };
  endpoints: Array<{ name: string; functions: string[] }>;
  warnings: string[];
}

async function build(app: string, flags: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Built> {
  const result = await runSvc(["build", "--json", "--no-deps", "--root", app, ...flags], { env: { ...process.env, NO_COLOR: "1", ...env } });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Built;
}

describe("svc build with nothing changed", () => {
  beforeAll(async () => {
    for (const name of Object.keys(CASES) as Case[]) {
      apps[name] = copyFixture("pack-app");
      writeFileSync(join(apps[name], ".svcignore"), "# nothing\n");
      writeFileSync(join(apps[name], "package-lock.json"), "{}\n");
    }
    writeFileSync(join(apps.configEnv, "svc.config.ts"), CONFIG_READING_ENV);
    writeFileSync(join(apps.upgradedNpmPackage, "svc.config.ts"), "export default {};\n"); // a config's package imports are the lockfile's
    writeFileSync(join(apps.configListsEnv, "svc.config.ts"), CONFIG_LISTING_ENV);
    writeFileSync(join(apps.userPlugin, "svc.config.ts"), CONFIG_WITH_PLUGIN);
    writeFileSync(join(apps.disabledPlugin, "svc.config.ts"), CONFIG_DISABLING_PLUGIN);
    await sleep(2100); // the files older than the racy window: each app's first build, which makes .svc/ in its folder, records
    for (const name of Object.keys(CASES) as Case[]) {
      firstBuilds[name] = await build(apps[name], [], { BUILD_RECORD_APP: "first", SVC_INSTALLER: "uv" });
      expect(firstBuilds[name].upToDate).toBe(false);
      CASES[name](apps[name]);
    }
  }, 120_000);

  it("answers from the record: the same result, no stage run, the artifact untouched", async () => {
    const app = apps.unchanged;
    const full = firstBuilds.unchanged;
    const artifact = join(app, ".svc/artifact.tar.gz");
    const before = statSync(artifact).mtimeMs;
    const again = await build(app, [], { BUILD_RECORD_APP: "first", SVC_INSTALLER: "uv" });
    expect(again.upToDate).toBe(true);
    expect(Object.keys(again.timings)).toEqual(["upToDate"]);
    expect(again.artifact).toEqual(full.artifact);
    expect(again.endpoints).toEqual(full.endpoints);
    expect(statSync(artifact).mtimeMs).toBe(before);

    const human = await runSvc(["build", "--no-deps", "--root", app], {
      env: { ...process.env, NO_COLOR: "1", BUILD_RECORD_APP: "first", SVC_INSTALLER: "uv" },
    });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stderr).toMatch(/✓ upToDate .* inputs as the last build found them/);
    expect(human.stdout).toContain(`sha256    ${full.artifact.sha256}`);
    expect(human.stdout).toMatch(/up to date in \d+ ms/);
  });

  it.each(["editedSource", "addedSource", "addedRootFile", "editedRequirements", "editedIgnoreFile", "upgradedNpmPackage", "removedArtifact"] as const)(
    "builds again after a change: %s",
    async (name) => {
      const again = await build(apps[name], [], { BUILD_RECORD_APP: "first", SVC_INSTALLER: "uv" });
      expect(again.upToDate).toBe(false);
      expect(again.timings).toHaveProperty("pack");
      if (name === "editedIgnoreFile") expect(again.artifact.files).toBeLessThan(firstBuilds[name].artifact.files); // data/ left out
    },
  );

  it("builds again when a variable the config read changes, and only then", async () => {
    const app = apps.configEnv;
    expect((await build(app, [], { BUILD_RECORD_APP: "first", SVC_INSTALLER: "uv", UNRELATED: "x", SVC_CACHE_DIR: "/nowhere" })).upToDate).toBe(true);
    expect((await build(app, [], { BUILD_RECORD_APP: "second", SVC_INSTALLER: "uv" })).upToDate).toBe(false);
  });

  it("builds again when any variable changes, once the config listed them all", async () => {
    const app = apps.configListsEnv;
    expect((await build(app, [], { BUILD_RECORD_APP: "first", SVC_INSTALLER: "uv" })).upToDate).toBe(true);
    expect((await build(app, [], { BUILD_RECORD_APP: "first", SVC_INSTALLER: "uv", BUILD_RECORD_X1: "1" })).upToDate).toBe(false);
  });

  it("builds again when an installer variable changes", async () => {
    expect((await build(apps.installerEnv, [], { BUILD_RECORD_APP: "first", SVC_INSTALLER: "pip" })).upToDate).toBe(false);
  });

  it("builds again with other flags, and with --force", async () => {
    const env = { BUILD_RECORD_APP: "first", SVC_INSTALLER: "uv" };
    expect((await build(apps.otherFlags, ["--exclude", "six"], env)).upToDate).toBe(false);
    expect((await build(apps.force, ["--force"], env)).upToDate).toBe(false);
  });

  it("builds a copy of the app folder, .svc/ and all, as the other app it is", async () => {
    const copy = join(mkdtempSync(join(tmpdir(), "svc-copy-")), "pack-app");
    cpSync(apps.unchanged, copy, { recursive: true });
    const built = await build(copy, [], { BUILD_RECORD_APP: "first", SVC_INSTALLER: "uv" });
    expect(built.upToDate).toBe(false);
    expect(built.artifact.path).toBe(join(copy, ".svc/artifact.tar.gz"));
  });

  it("never skips a build whose svc.config.ts adds or disables plugins", async () => {
    expect((await build(apps.userPlugin, [], { BUILD_RECORD_APP: "first", SVC_INSTALLER: "uv" })).upToDate).toBe(false);
    expect((await build(apps.disabledPlugin, [], { BUILD_RECORD_APP: "first", SVC_INSTALLER: "uv" })).upToDate).toBe(false);
  });

  it("does not record a build whose inputs changed just before it", async () => {
    const app = copyFixture("pack-app");
    expect((await build(app)).upToDate).toBe(false);
    expect((await build(app)).upToDate).toBe(false);
  });
});
