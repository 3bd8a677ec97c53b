/**
 * The peer of the comparison (issue 10): the hosted platform's own local test server, from its
 * Python SDK on PyPI (`runpod` 1.12), started as `handler.py --rp_serve_api` with a handler that
 * returns its input. Installed once into a venv under the temp folder (reused by later runs).
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../platform/_free-port.ts";

const PEER_VERSION = "1.12.0";
const VENV = join(tmpdir(), `svc-bench-peer-runpod-${PEER_VERSION}`);
const HANDLER = `import runpod


def handler(job):
    return job["input"]


runpod.serverless.start({"handler": handler})
`;

/** The venv's python, creating the venv and installing the peer first when needed. */
export function peerPython(): string {
  const python = join(VENV, "bin", "python");
  if (!existsSync(join(VENV, ".installed"))) {
    process.stderr.write(`installing the peer (PyPI runpod==${PEER_VERSION}) into ${VENV}…\n`);
    execFileSync(process.env.SVC_PYTHON ?? "python3", ["-m", "venv", VENV], { stdio: "inherit" });
    execFileSync(python, ["-m", "pip", "install", "-q", `runpod==${PEER_VERSION}`], { stdio: "inherit" });
    writeFileSync(join(VENV, ".installed"), PEER_VERSION);
  }
  return python;
}

export interface Peer {
  url: string;
  stop(): Promise<void>;
}

/** Starts the peer's local test server on a free loopback port and waits until it answers. */
export async function startPeer(): Promise<Peer> {
  const python = peerPython();
  const dir = join(VENV, "app");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "handler.py"), HANDLER);
  const port = await freePort();
  const child: ChildProcess = spawn(python, ["handler.py", "--rp_serve_api", "--rp_api_host", "127.0.0.1", "--rp_api_port", String(port)], {
    cwd: dir,
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the peer server exited (${child.exitCode})`);
    const up = await fetch(`${url}/runsync`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"input":{"op":"noop"}}' }).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error("the peer server did not answer within 60 s");
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    async stop() {
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once("exit", r)));
    },
  };
}
