/**
 * `svc --version` and `svc --help` answer from package.json and a static table, loading no command
 * module (startup, docs/architecture.md); the table says what each command registers with cac.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { cac } from "cac";
import { afterAll, describe, expect, it } from "vitest";
import { commands, helpText, usage } from "../../cli/commands/index.ts";

const run = promisify(execFile);
const BIN = resolve(import.meta.dirname, "../../bin/svc.mjs");
const VERSION = (JSON.parse(readFileSync(resolve(import.meta.dirname, "../../package.json"), "utf8")) as { version: string }).version;
const tmp = mkdtempSync(join(tmpdir(), "svc-help-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs the bin with a module hook that records every module under cli/commands/ it loads. */
async function svcTraced(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ stdout: string; loaded: string[] }> {
  const trace = join(tmp, `trace-${args.join("_") || "none"}.txt`);
  writeFileSync(trace, "");
  const hooks = join(tmp, "hooks.mjs");
  writeFileSync(
    hooks,
    `import { appendFileSync } from "node:fs";
export async function load(url, context, next) {
  if (url.includes("/cli/commands/")) appendFileSync(${JSON.stringify(trace)}, url + "\\n");
  return next(url, context);
}`,
  );
  const register = join(tmp, "register.mjs");
  writeFileSync(register, `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  const sources = { ...process.env, SVC_BUILT_CLI: "" }; // the modules it loads from sources, not the suite's build
  const { stdout } = await run(process.execPath, ["--import", pathToFileURL(register).href, BIN, ...args], { env: { ...sources, ...env, NO_COLOR: "1" } });
  const loaded = readFileSync(trace, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((url) => url.replace(/^.*\/cli\/commands\//, ""));
  return { stdout, loaded: [...new Set(loaded)] };
}

describe("svc --version and --help", () => {
  it("--version prints svc's own version (not npm_package_version) and loads no command module", async () => {
    const { stdout, loaded } = await svcTraced(["--version"], { npm_package_version: "9.9.9" });
    expect(stdout).toBe(`svc/${VERSION} ${process.platform}-${process.arch} node-${process.version}\n`);
    expect(loaded.filter((file) => !file.startsWith("index."))).toEqual([]);
  });

  it("--help prints the static command table and loads no command module", async () => {
    const { stdout, loaded } = await svcTraced(["--help"]);
    expect(stdout).toBe(helpText(VERSION));
    expect(loaded.filter((file) => !file.startsWith("index."))).toEqual([]);
  });

  it("a command line loads only the command it names", async () => {
    const { stdout, loaded } = await svcTraced(["build", "--help"]);
    expect(stdout).toContain("$ svc build");
    expect(loaded.filter((file) => !file.startsWith("index.") && !file.startsWith("_"))).toEqual(["build.ts"]);
  });

  it("a --no-x flag's help does not say (default: true), which would read as the flag being on", async () => {
    const { stdout } = await svcTraced(["build", "--help"]);
    expect(stdout).toMatch(/--no-deps +Do not install requirements/);
    expect(stdout).not.toMatch(/--no-deps.*\(default: true\)/);
  });

  it("a command's help names svc once, and help for a command with an action exits 0 without an error after it", async () => {
    const volume = await run(process.execPath, [BIN, "volume", "--help"], { env: { ...process.env, NO_COLOR: "1" } });
    expect(volume.stdout).toContain("$ svc volume create <name>");
    expect(volume.stdout).not.toContain("svc svc");
    const start = await run(process.execPath, [BIN, "platform", "start", "--help"], { env: { ...process.env, NO_COLOR: "1" } }); // rejects on exit 1
    expect(start.stdout).toContain("$ svc platform <action>");
    expect(start.stderr).not.toContain("UNKNOWN_COMMAND");
  });

  it("the static table matches what each command registers with cac", async () => {
    const cli = cac("svc");
    for (const load of Object.values(commands)) (await load())(cli);
    expect(Object.fromEntries(cli.commands.map((command) => [command.name, [command.rawName, command.description]]))).toEqual(usage);
  });
});

describe("typos on the command line", () => {
  const svcFails = (args: string[]) =>
    run(process.execPath, [BIN, ...args], { env: { ...process.env, NO_COLOR: "1" } }).then(
      () => expect.fail(`svc ${args.join(" ")} succeeded`),
      (error: { code: number; stderr: string }) => error,
    );

  it("a mistyped command names the closest one; a name like none of them only says it is unknown", async () => {
    const typo = await svcFails(["biuld"]);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('[UNKNOWN_COMMAND] Unknown command "biuld". Did you mean `svc build`?');
    expect((await svcFails(["deplyo"])).stderr).toContain("Did you mean `svc deploy`?");
    expect((await svcFails(["xyzzy"])).stderr).not.toContain("Did you mean");
  });

  it("a mistyped option names the command's closest option", async () => {
    const typo = await svcFails(["build", "--anlyze", "--root", tmp]);
    expect(typo.stderr).toContain("[CLI_USAGE] Unknown option `--anlyze`. Did you mean `--analyze`?");
    expect((await svcFails(["build", "--keep-bild", "--root", tmp])).stderr).toContain("Did you mean `--keep-build`?");
    expect((await svcFails(["logs", "x", "--folow"])).stderr).toContain("Did you mean `--follow`?");
  });
});
