/**
 * `svc client` end to end: `svc init`, `svc deploy` to a real embedded platform (started in this
 * process on a temp data dir, port 0; real Python workers), `svc client`, then the generated client
 * compiled with tsc (strict) into a program that calls every deployed function and route. A second
 * program with wrong inputs must not compile. Without PyPI the app deploys with --no-deps and the
 * function that needs its requirement (humanize) is not called (said on stderr).
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient } from "../../core/client/index.ts";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";
import { runSvc } from "../_support/cli.ts";
import { pypiReachable } from "../plugins/_helpers.ts";

import { TSC } from "../_support/tools.ts";
const online = await pypiReachable();
if (!online) console.warn("svc client test: PyPI did not answer; deploying with --no-deps and not calling describe (needs humanize)");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}
const exec = (file: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  new Promise<Run>((resolve) =>
    execFile(file, args, { ...options, timeout: 180_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );

const TSCONFIG = (files: string[], emit: boolean) =>
  JSON.stringify({
    compilerOptions: {
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      lib: ["ES2022", "DOM"],
      outDir: "dist",
      noEmit: !emit,
    },
    files,
  });

describe("svc client (embedded platform, e2e)", () => {
  let platform: RunningPlatform;
  let work: string;
  let app: string;
  let prog: string;
  const svc = (args: string[]) =>
    runSvc(args, { env: { ...process.env, PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey, NO_COLOR: "1" }, timeout: 180_000 });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "svc-client-"));
    platform = await startPlatform({ dataDir: join(work, "platform"), port: 0, log: () => {} });
    app = join(work, "demo");
    prog = join(work, "prog");
    await mkdir(prog);
  });
  afterAll(async () => {
    await platform?.close();
    await rm(work, { recursive: true, force: true });
  });

  it("refuses before a deploy: the manifest has no URLs", async () => {
    expect((await svc(["init", "demo", "--root", work])).code).toBe(0);
    const unbuilt = await svc(["client", "--root", app]);
    expect(unbuilt.stderr).toContain("NOT_DEPLOYED"); // not "run svc build": a build alone has no URLs
    expect((await svc(["build", "--no-deps", "--root", app])).code).toBe(0);
    const result = await svc(["client", "--root", app]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("NOT_DEPLOYED");
    expect(result.stderr).toContain("svc deploy");
  }, 60_000);

  it("writes a client that compiles strictly and calls every deployed function and route", async () => {
    const deployed = await svc(["deploy", "--root", app, ...(online ? [] : ["--no-deps"])]);
    expect(deployed.code, deployed.stderr).toBe(0);
    const written = await svc(["client", "--root", app, "--out", join(prog, "svc-client.ts")]);
    expect(written.code, written.stderr).toBe(0);

    await writeFile(join(prog, "package.json"), '{ "type": "module" }\n');
    await writeFile(
      join(prog, "main.ts"),
      `import { createClient, type EchoOutput, type GenerateInput } from "./svc-client.js";
const client = createClient({ apiKey: ${JSON.stringify(platform.apiKey)}, timeoutMs: 120_000 });
const echo: EchoOutput = await client.echo({ text: "hi", repeat: 2 });
const health = await client.health();
const generated = await client.generate({ prompt: "a cat" });
const job = await client.submit.generate({ prompt: "a dog", steps: 3 });
const submitted = await job.wait();
const described = ${online ? "await client.describe({ size_bytes: 2048 })" : "null"};
let failure = "";
try {
  await client.generate({} as GenerateInput);
} catch (error) {
  failure = (error as Error).message;
}
console.log(JSON.stringify({ echo, health, generated, submitted, id: job.id, described, failure }));
`,
    );
    await writeFile(join(prog, "tsconfig.json"), TSCONFIG(["main.ts"], true));
    const compiled = await exec(process.execPath, [TSC, "-p", "."], { cwd: prog });
    expect(compiled.code, compiled.stdout).toBe(0);

    const ran = await exec(process.execPath, [join(prog, "dist", "main.js")], { cwd: prog });
    expect(ran.code, ran.stderr).toBe(0);
    const result = JSON.parse(ran.stdout);
    expect(result.echo).toEqual({ text: "hi hi" });
    expect(result.health).toEqual({ ok: true });
    expect(result.generated).toMatchObject({ prompt: "a cat", steps: 20 });
    expect(result.submitted).toMatchObject({ prompt: "a dog", steps: 3 });
    expect(result.id).toMatch(/\S/);
    expect(result.failure).toContain("prompt: expected str (required), got nothing"); // the worker's reason, not only a status
    if (online) expect(result.described).toEqual({ size: "2.0 kB", bytes: 2048 });
  }, 240_000);

  it("the deploy state survives rebuilds: after `svc build`, svc client still finds the deployed URLs", async () => {
    const state = join(app, ".svc", "deployments", "production.json");
    const before = await readFile(state, "utf8");
    const built = await svc(["build", "--no-deps", "--root", app]);
    expect(built.code, built.stderr).toBe(0);
    expect(await readFile(state, "utf8")).toBe(before);
    const written = await svc(["client", "--root", app, "--out", join(prog, "after-build.ts")]);
    expect(written.code, written.stderr).toBe(0);
    const urls = (await createPlatformClient(platform).getApp("demo"))!.environments[0]!.endpoints.map((e) => e.url);
    const source = await readFile(join(prog, "after-build.ts"), "utf8");
    for (const url of urls) expect(source).toContain(JSON.stringify(url));
  }, 120_000);

  it("wrong inputs do not compile: a missing required parameter, a wrong type, an unknown name", async () => {
    await writeFile(
      join(prog, "bad.ts"),
      `import { createClient } from "./svc-client.js";
const client = createClient({ apiKey: "k" });
await client.generate({ steps: 3 });
await client.echo({ text: "hi", repeat: "twice" });
await client.describe({ size: 3 });
`,
    );
    await writeFile(join(prog, "tsconfig.bad.json"), TSCONFIG(["bad.ts"], false));
    const compiled = await exec(process.execPath, [TSC, "-p", "tsconfig.bad.json"], { cwd: prog });
    expect(compiled.code).not.toBe(0);
    const lines = compiled.stdout.split("\n").filter((line) => line.startsWith("bad.ts("));
    expect(lines.map((line) => Number(/^bad\.ts\((\d+),/.exec(line)![1]))).toEqual([3, 4, 5]);
    expect(compiled.stdout).toContain("'prompt'");
    expect(compiled.stdout).toContain("'size'");
  }, 60_000);

  it("--env writes the client of another environment, with that environment's endpoint URLs, to .svc/client.<env>.ts", async () => {
    const staged = await svc(["deploy", "--env", "staging", "--root", app, ...(online ? [] : ["--no-deps"])]);
    expect(staged.code, staged.stderr).toBe(0);
    const written = await svc(["client", "--env", "staging", "--root", app]);
    expect(written.code, written.stderr).toBe(0);
    const source = await readFile(join(app, ".svc", "client.staging.ts"), "utf8");
    const environments = (await createPlatformClient(platform).getApp("demo"))!.environments;
    const urlsOf = (env: string) =>
      environments
        .find((e) => e.name === env)!
        .endpoints.map((e) => e.url)
        .sort();
    expect(urlsOf("staging")).toHaveLength(3);
    for (const url of urlsOf("staging")) expect(source).toContain(JSON.stringify(url));
    for (const url of urlsOf("production")) expect(source).not.toContain(JSON.stringify(url));
    expect(source).toContain("generate: (input: GenerateInput)");
    const unknown = await svc(["client", "--env", "nope", "--root", app]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("NOT_FOUND");
  }, 240_000);
});
