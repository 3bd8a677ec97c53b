/**
 * `svc shell` with the real CLI and a real embedded platform: `-c` reads the deployed artifact (at
 * /app in the sandbox), the endpoint's network volume and a resolved secret, and passes the exit
 * code through; stdin from a pipe feeds a shell, stdout and stderr stay apart; a terminal (util-linux
 * `script`) gets a pseudo-terminal on the platform's side; the endpoint's id comes from the deploy
 * state (no GraphQL call) unless that is stale; a worker's key is refused (KEY_SCOPE), and a platform
 * without shells (a hosted one, here the test double) is SHELL_UNAVAILABLE.
 */
import { execFile, spawn } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, runSvc, type CliResult } from "../_support/cli.ts";
import { createPlatformClient, runShell, type PlatformClient } from "../../core/client/index.ts";
import { isSvcError } from "../../core/errors.ts";
import { startFakePlatform } from "../_support/fake-platform.ts";
import { startTestPlatform, type TestPlatform } from "../platform/_support.ts";
import { IMAGE_PATH } from "../../platform/workers/shell.ts";

const FIXTURE = new URL("../../fixtures/shell-app/", import.meta.url).pathname;
const SECRET = "s3cr3t-for-the-shell";
const scriptAvailable = await new Promise<boolean>((resolve) => execFile("script", ["--version"], (error) => resolve(!error)));

/** The CLI with `input` on its stdin (a pipe that then ends). */
function svcWithInput(args: string[], input: string, env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe("svc shell", { timeout: 180_000 }, () => {
  let platform: TestPlatform;
  let client: PlatformClient;
  let root: string;
  let env: NodeJS.ProcessEnv;
  let endpointId: string;
  const svc = (args: string[]) => runSvc([...args, "--root", root], { env, timeout: 150_000 });

  beforeAll(async () => {
    platform = await startTestPlatform();
    client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
    root = await mkdtemp(join(tmpdir(), "svc-shell-app-"));
    await cp(FIXTURE, root, { recursive: true });
    env = { ...process.env, NO_COLOR: "1", PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey };
    const volume = await client.createVolume({ name: "shell-data", size: 1 });
    await mkdir(join(platform.dataDir, "volumes", volume.id, "inbox"), { recursive: true });
    await writeFile(join(platform.dataDir, "volumes", volume.id, "inbox", "hello.txt"), "kept on the volume\n");
    await client.createSecret("shell_token", SECRET);
    const deployed = await svc(["deploy"]);
    expect(deployed.code, deployed.stderr).toBe(0);
    endpointId = (await client.getApp("shell-app"))!.environments[0]!.endpoints.find((e) => e.name === "probe")!.id;
  });
  afterAll(async () => {
    await platform?.dispose();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("-c reads the artifact, the volume and the resolved secret, and exits with the command's code", async () => {
    const command =
      'cat notes.txt; cat "$PLATFORM_VOLUME_PATH/inbox/hello.txt"; echo "token=$API_TOKEN mode=$MODE"; python3 -c "import svc; print(svc.__name__)"; pwd; echo "socket=${SVC_PLATFORM_SOCKET:-none}"; python3 -c "import socket; s = socket.socket(); s.settimeout(2); print(\'tcp=%d\' % s.connect_ex((\'127.0.0.1\', PORT)))"; python -c "print(\'python=%d\' % (40 + 2))"; echo "path=$PATH"; exit 7'.replace(
        "PORT",
        new URL(platform.url).port,
      );
    const r = await svc(["shell", "probe", "-c", command]);
    expect(r.stderr).not.toContain("error");
    expect(r.code).toBe(7);
    expect(r.stdout).toContain("notes shipped in the artifact");
    expect(r.stdout).toContain("kept on the volume");
    expect(r.stdout).toContain(`token=${SECRET} mode=deployed`);
    expect(r.stdout).toMatch(/^svc$/m); // the runtime in the build imports as the worker's does
    expect(r.stdout).toMatch(/^python=42$/m); // `python` wherever the image has Python (a GPU image has only python3)
    // the image's PATH (its interpreter's folder first), none of the host's own folders (~/go/bin, pyenv shims)
    const [interpreterDir, ...rest] = /^path=(.*)$/m.exec(r.stdout)![1]!.split(":");
    const imageDirs = IMAGE_PATH.split(":");
    expect(rest.filter((dir) => !imageDirs.includes(dir) && !/^\/tmp\/tmp\.\w+$/.test(dir))).toEqual([]); // the python link's folder
    expect(process.env.PATH!.split(":").filter((dir) => !imageDirs.includes(dir) && dir !== interpreterDir && rest.includes(dir))).toEqual([]);
    const sandboxed = r.stdout.includes("/app\n");
    if (sandboxed) expect(r.stdout).toContain("kept on the volume"); // at /platform-volume (PLATFORM_VOLUME_PATH)
    // the worker's network too: where workers get a namespace of their own, the shell has their channel to the platform
    const socket = /^socket=(.*)$/m.exec(r.stdout)?.[1];
    const tcp = Number(/^tcp=(\d+)$/m.exec(r.stdout)?.[1]);
    expect(Number.isInteger(tcp), r.stdout).toBe(true);
    if (socket === "/run/svc/platform.sock") expect(tcp, "the platform's TCP port from inside the shell's own network").not.toBe(0);
    else expect(tcp).toBe(0); // the host's network, as the workers have it here
    console.log(`the shell ran ${sandboxed ? "in the bwrap sandbox (/app)" : "in flags mode (the build's folder)"}, platform socket ${socket}`);
    // the secret's value went into the sandbox only: the platform's logs name the shell, not the value
    const lines = (await client.workerLogs(endpointId, 50)).join("\n");
    expect(lines).toMatch(/shell sh_\w+ opened \(-c /);
    expect(lines).toMatch(/shell sh_\w+ exited \(code 7\)/);
  });

  it("takes the endpoint's id from the deploy state, asking GraphQL nothing; a stale one is looked up", async () => {
    /** GraphQL requests the platform has answered (its own metrics). */
    const graphqlCalls = async () => {
      const { text } = await platform.context.telemetry!.metrics!.scrape();
      return [...text.matchAll(/^svc_http_requests_total\{route="\/graphql"[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    };
    const before = await graphqlCalls();
    const fast = await svc(["shell", "probe", "-c", "echo from the state"]);
    expect(fast.stdout).toBe("from the state\n");
    expect(await graphqlCalls()).toBe(before); // the id came from .svc/deployments/production.json
    const file = join(root, ".svc", "deployments", "production.json");
    const state = await readFile(file, "utf8");
    expect(state).toContain(`/v2/${endpointId}"`);
    try {
      await writeFile(file, state.replace(`/v2/${endpointId}"`, '/v2/ep_deleted_since"')); // as after an undeploy from elsewhere
      const stale = await svc(["shell", "probe", "-c", "echo looked up"]);
      expect(stale.stdout).toBe("looked up\n");
      expect(stale.code).toBe(0);
      expect(await graphqlCalls()).toBeGreaterThan(before);
    } finally {
      await writeFile(file, state);
    }
  });

  it("a pipe feeds the command's stdin and its end; stderr stays apart from stdout", async () => {
    const r = await svcWithInput(
      ["shell", "probe", "--root", root, "-c", 'while read line; do echo "got $line"; done; echo oops >&2; exit 3'],
      "one\ntwo\n",
      env,
    );
    expect(r.code).toBe(3);
    expect(r.stdout).toBe("got one\ngot two\n");
    expect(r.stderr).toContain("oops");
    expect(r.stdout).not.toContain("oops");
  });

  it("without -c, a shell reads its commands from the pipe", async () => {
    const r = await svcWithInput(["shell", "probe", "--root", root], "echo from the pipe\nexit 4\n", env);
    expect(r.stdout).toBe("from the pipe\n");
    expect(r.code).toBe(4);
  });

  it.runIf(scriptAvailable)("a terminal gets a pseudo-terminal on the platform's side", async () => {
    const line = `${process.execPath} ${BIN} shell probe --root ${root} -c 'tty; stty size; exit 5'`;
    const r = await new Promise<CliResult>((resolve) =>
      execFile("script", ["-qec", line, "/dev/null"], { env, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(r.stdout).toMatch(/\/dev\/pts\/\d+/);
    expect(r.stdout).toMatch(/^\d+ \d+\r?$/m);
    expect(r.code).toBe(5);
  });

  it("refuses a worker's key: only the user's key opens a shell", async () => {
    const record = platform.context.store.endpoints.get(endpointId)!;
    const workerKey = platform.context.workerKeys.keyFor(record);
    const error = await runShell(
      { url: platform.url, apiKey: workerKey },
      { endpointId, command: "true", stdin: process.stdin, stdout: process.stdout, stderr: process.stderr },
    ).catch((e) => e);
    expect(isSvcError(error) && error.code).toBe("KEY_SCOPE");
    const wrong = await runShell(
      { url: platform.url, apiKey: "not-a-key" },
      { endpointId, command: "true", stdin: process.stdin, stdout: process.stdout, stderr: process.stderr },
    ).catch((e) => e);
    expect(isSvcError(wrong) && wrong.code).toBe("AUTH_FAILED");
  });

  it("says SHELL_UNAVAILABLE where the platform offers no shells (a hosted one)", async () => {
    const fake = await startFakePlatform();
    try {
      fake.state.endpoints.push({
        ...{
          type: "QB",
          gpuIds: null,
          gpuCount: null,
          instanceIds: null,
          idleTimeout: 5,
          scalerType: "QUEUE_DELAY",
          scalerValue: 4,
          workersMin: 0,
          workersMax: 1,
          executionTimeoutMs: 600000,
        },
        ...{ templateId: null, env: [], environmentId: null, buildId: null, locations: null, networkVolumeId: null, imageName: null },
        id: "ep-hosted",
        name: "probe",
        createdAt: new Date().toISOString(),
      });
      const r = await runSvc(["shell", "ep-hosted", "-c", "true", "--root", root], {
        env: { ...env, PLATFORM_API_URL: fake.url, PLATFORM_API_KEY: fake.apiKey },
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("[SHELL_UNAVAILABLE]");
      expect(r.stderr).toContain("embedded platform");
    } finally {
      await fake.close();
    }
  });
});
