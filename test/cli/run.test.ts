/**
 * `svc run` as a user runs it: the real CLI in a child process (bin/svc.mjs), against a real
 * embedded platform in this process: ready banner, port fallback, SIGINT clean-up, a wrong key,
 * the auto-provision confirmation in a non-TTY and on a terminal (a pseudo-terminal from Python's
 * pty module), a signal during startup.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { copyDevApp, startTestPlatform, type TestPlatform } from "../dev/_dev-platform.ts";

const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;

interface Run {
  child: ChildProcessWithoutNullStreams;
  output(): string;
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
}

function svc(args: string[], env: Record<string, string>): Run {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, NO_COLOR: "1", NODE_ENV: "test", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let text = "";
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return {
    child,
    output: () => text,
    exited,
    waitFor(pattern, ms = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = text.match(pattern);
          if (match) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${pattern}; output:\n${text}`));
        }, ms);
        listeners.add(check);
        void exited.then(() =>
          setTimeout(() => {
            if (listeners.has(check)) {
              listeners.delete(check);
              clearTimeout(timer);
              reject(new Error(`svc exited before ${pattern}; output:\n${text}`));
            }
          }, 50),
        );
        check();
      });
    },
  };
}

async function freePortTaken(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "localhost", resolve));
  return { port: (server.address() as { port: number }).port, server };
}

describe("svc run (CLI)", { timeout: 120_000 }, () => {
  let platform: TestPlatform;
  let client: PlatformClient;
  let env: Record<string, string>;
  const roots: string[] = [];
  const runs: Run[] = [];
  const liveNames = async () =>
    (await client.listEndpoints())
      .filter((e) => e.name.startsWith("live-"))
      .map((e) => e.name)
      .sort();

  beforeAll(async () => {
    platform = await startTestPlatform();
    client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
    env = { PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey };
  });
  afterAll(async () => {
    for (const run of runs) if (run.child.exitCode === null) run.child.kill("SIGKILL");
    await platform?.close();
    for (const root of roots) await rm(root, { recursive: true, force: true });
  });

  const start = async (args: string[], extraEnv: Record<string, string> = {}) => {
    const root = await copyDevApp();
    roots.push(root);
    const run = svc(["run", "--root", root, ...args], { ...env, ...extraEnv });
    runs.push(run);
    return { root, run };
  };

  it("prints the ready banner, takes the next port when the requested one is in use, and deletes its live- endpoints on SIGINT", async () => {
    const blocker = await freePortTaken();
    try {
      const { run } = await start(["--port", String(blocker.port), "--no-reload"]);
      const [, url] = await run.waitFor(/ready in .* at (http:\/\/\S+)/);
      expect(run.output()).toMatch(new RegExp(`port ${blocker.port} is in use; using port (\\d+) instead`));
      expect(new URL(url!).port).not.toBe(String(blocker.port));
      expect(run.output()).toContain("/hello/runsync");
      expect(await (await fetch(`${url}/`)).json()).toMatchObject({ status: "ok", app: "dev-app" });

      const res = await fetch(`${url}/hello/runsync`, { method: "POST", body: JSON.stringify({ name: "CLI" }) });
      expect(await res.json()).toMatchObject({ output: { greeting: "Hello, CLI!" } });
      expect(await liveNames()).toEqual(["live-hello"]);

      run.child.kill("SIGINT");
      expect(await run.exited).toBe(0);
      expect(run.output()).toContain("deleted live-hello");
      expect(await liveNames()).toEqual([]);
    } finally {
      await new Promise((r) => blocker.server.close(r));
    }
  });

  it("--auto-provision --yes in a new app, then Ctrl+C (a real SIGINT): the app svc run created goes with its live- endpoints", async () => {
    expect(await client.getApp("dev-app")).toBeNull();
    const { run } = await start(["--port", "0", "--no-reload", "--auto-provision", "--yes"]);
    await run.waitFor(/ready in/);
    expect(await client.getApp("dev-app")).not.toBeNull();
    expect((await liveNames()).length).toBeGreaterThan(0);

    run.child.kill("SIGINT");
    expect(await run.exited).toBe(0);
    expect(await liveNames()).toEqual([]);
    expect(await client.getApp("dev-app")).toBeNull();
    expect(run.output()).toContain("deleted app dev-app (created by this svc run)");
  });

  it("an app that existed before svc run, or that a deploy gave an environment meanwhile, stays", async () => {
    const before = await client.createApp("dev-app");
    const first = (await start(["--port", "0", "--no-reload", "--auto-provision", "--yes"])).run;
    await first.waitFor(/ready in/);
    first.child.kill("SIGINT");
    expect(await first.exited).toBe(0);
    expect((await client.getApp("dev-app"))?.id).toBe(before.id);
    await client.deleteApp(before.id);

    const second = (await start(["--port", "0", "--no-reload", "--auto-provision", "--yes"])).run;
    await second.waitFor(/ready in/);
    const created = (await client.getApp("dev-app"))!;
    await client.createEnvironment(created.id, "production"); // as `svc deploy` would, meanwhile
    second.child.kill("SIGINT");
    expect(await second.exited).toBe(0);
    expect(await liveNames()).toEqual([]);
    expect((await client.getApp("dev-app"))?.id).toBe(created.id);
    expect(second.output()).toContain("kept app dev-app");
    await client.deleteApp(created.id);
  });

  it("prints its live endpoints' worker output prefixed by endpoint: a print() and an import-error traceback", async () => {
    const root = await copyDevApp();
    roots.push(root);
    await writeFile(
      join(root, "workers", "talk.py"),
      `from svc import Endpoint\n\n\n@Endpoint(name="talker", cpu="cpu3c-2-4")\ndef talk(text: str) -> dict:\n    print(f"talker says {text}")\n    return {"said": text}\n`,
    );
    await writeFile(
      join(root, "workers", "broken.py"),
      `import not_installed_pkg\nfrom svc import Endpoint\n\n\n@Endpoint(name="broken", cpu="cpu3c-2-4")\ndef broken() -> int:\n    return 1\n`,
    );
    const run = svc(["run", "--root", root, "--port", "0", "--no-reload"], env);
    runs.push(run);
    const [, url] = await run.waitFor(/ready in .* at (http:\/\/\S+)/);
    const res = await fetch(`${url}/talk/runsync`, { method: "POST", body: JSON.stringify({ text: "hi" }) });
    expect(await res.json()).toMatchObject({ output: { said: "hi" } });
    await run.waitFor(/^\[talker\] talker says hi$/m, 15_000);

    // The call may wait for a worker that cannot start: do not wait for its answer.
    void fetch(`${url}/broken/runsync?wait=1000`, { method: "POST", body: "{}" }).catch(() => {});
    await run.waitFor(/^\[broken\] .*ModuleNotFoundError: No module named 'not_installed_pkg'/m, 30_000);

    run.child.kill("SIGINT");
    expect(await run.exited).toBe(0);
    expect(await liveNames()).toEqual([]);
  });

  it("fails with AUTH_FAILED and exit code 1 on a wrong API key, before saying it is ready", async () => {
    const { run } = await start(["--port", "0", "--no-reload"], { PLATFORM_API_KEY: "not-the-key" });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain("AUTH_FAILED");
    expect(run.output()).toContain("PLATFORM_API_KEY");
    expect(run.output()).not.toMatch(/ready/);
    expect(await liveNames()).toEqual([]);
  });

  /** The dev app plus five small endpoints: eight in all, over the confirmation threshold. */
  const appWithEightEndpoints = async () => {
    const root = await copyDevApp();
    roots.push(root);
    await mkdir(join(root, "more"), { recursive: true });
    for (let i = 0; i < 5; i++) {
      await writeFile(
        join(root, "more", `w${i}.py`),
        `from svc import Endpoint\n\n\n@Endpoint(name="w${i}", cpu="cpu3c-2-4")\ndef w${i}() -> int:\n    return ${i}\n`,
      );
    }
    return root;
  };

  it("--auto-provision with more than 5 endpoints asks first: refuses without a terminal, deploys all with --yes", async () => {
    const root = await appWithEightEndpoints();
    const refused = svc(["run", "--root", root, "--port", "0", "--no-reload", "--auto-provision"], env);
    runs.push(refused);
    expect(await refused.exited).toBe(1);
    expect(refused.output()).toContain("CONFIRMATION_REQUIRED");
    expect(await liveNames()).toEqual([]);

    const confirmed = svc(["run", "--root", root, "--port", "0", "--no-reload", "--auto-provision", "--yes"], env);
    runs.push(confirmed);
    await confirmed.waitFor(/ready in/);
    expect(await liveNames()).toEqual(["live-api", "live-hello", "live-slow", "live-w0", "live-w1", "live-w2", "live-w3", "live-w4"]);
    confirmed.child.kill("SIGTERM");
    expect(await confirmed.exited).toBe(0);
    expect(await liveNames()).toEqual([]);
  });

  it("a SIGTERM while the live- endpoints deploy at startup still deletes them and exits 0", async () => {
    // The signal handlers used to be installed only after the ready banner: a signal before that
    // (or right as it printed, under load) killed the process (exit code null) with endpoints left.
    const root = await appWithEightEndpoints();
    const run = svc(["run", "--root", root, "--port", "0", "--no-reload", "--auto-provision", "--yes"], env);
    runs.push(run);
    await run.waitFor(/deploying live-/);
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
    expect(run.output()).toContain("SIGTERM: stopping, deleting live- endpoints");
    expect(await liveNames()).toEqual([]);
  });

  it("answering n at the auto-provision prompt on a terminal says so (not 'stdin is not a terminal')", async () => {
    const root = await appWithEightEndpoints();
    const answerNo = [
      "import os, pty, sys",
      "pid, fd = pty.fork()",
      "if pid == 0: os.execvp(sys.argv[1], sys.argv[1:])",
      "seen, answered = b'', False",
      "while True:",
      "    try: data = os.read(fd, 4096)",
      "    except OSError: break",
      "    if not data: break",
      "    sys.stdout.buffer.write(data); sys.stdout.flush(); seen += data",
      "    if not answered and b'[y/N]' in seen: os.write(fd, b'n\\n'); answered = True",
      "sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))",
    ].join("\n");
    const child = spawn("python3", ["-c", answerNo, process.execPath, BIN, "run", "--root", root, "--port", "0", "--no-reload", "--auto-provision"], {
      env: { ...process.env, NO_COLOR: "1", ...env },
    });
    let text = "";
    child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (text += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(text).toMatch(/Deploy 8 live- endpoints \(api, hello, slow, w0, w1, w2, w3, w4\) to .* \[y\/N\]/);
    expect(code, text).toBe(1);
    expect(text).toContain("[CONFIRMATION_DECLINED] You answered no: not going to deploy 8 live- endpoints.");
    expect(text).toContain("without --auto-provision");
    expect(text).not.toContain("not a terminal");
    expect(await liveNames()).toEqual([]);
  });
});
