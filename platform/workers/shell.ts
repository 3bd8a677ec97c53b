/**
 * `svc shell`: a shell (or one command) in exactly what an endpoint's worker sees — its image
 * environment, its build at /app, its volume, its env with secrets resolved, the same sandbox and
 * limits, network and host user — made from the same launch plan (./launch-plan.ts) and spawned by
 * the same local backend (./backends/local.ts) as a worker, never registered as a worker (its worker
 * token opens no worker route). Under a pseudo-terminal (util-linux `script`, inside the sandbox)
 * when the client has a terminal, plain pipes otherwise.
 * docs/platform.md, "Shells".
 */
import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import type { EndpointRecord, Store } from "../store/index.ts";
import { newId, newSecret } from "../_ids.ts";
import type { Supervisor } from "./supervisor.ts";
import type { WorkerLaunch } from "./image-env.ts";
import { newWorker, signalWorker } from "./worker-process.ts";

export interface ShellRequest {
  /** A command line (`svc shell -c`), else an interactive shell. */
  command?: string;
  /** The client's terminal: the shell runs under a pseudo-terminal of its size. */
  tty?: { rows: number; cols: number; term?: string };
}

export interface ShellSession {
  id: string;
  proc: ChildProcess;
  /** Ends the shell and every process in its sandbox. */
  kill(): void;
}

const SCRIPT = "/usr/bin/script";
/** An image's own PATH (the Debian and python images' default), not the host's folders (~/go/bin, pyenv shims). */
export const IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/**
 * `python` where the image has Python but no command of that name (the GPU image has only python3): a
 * link to the image's interpreter ($SVC_SHELL_PYTHON, set by shellEnv) in a folder of the shell's own
 * /tmp, last on PATH, so an image's own `python` wins.
 */
const PYTHON_LINK =
  'command -v python >/dev/null 2>&1 || { svc_bin=$(mktemp -d) && ln -s "$SVC_SHELL_PYTHON" "$svc_bin/python" && PATH="$PATH:$svc_bin"; unset svc_bin; };';

/** The command the sandbox runs: `sh -c`, an interactive shell, each under `script` for a terminal. */
export function shellCommand(request: ShellRequest): string[] {
  const interactive = existsSync("/bin/bash") ? "exec /bin/bash -i" : "exec /bin/sh -i";
  if (!request.tty || !existsSync(SCRIPT)) return ["/bin/sh", "-c", `${PYTHON_LINK} ${request.command ?? "exec /bin/sh"}`];
  const { rows, cols } = request.tty;
  // script gives the shell a pseudo-terminal (job control, Ctrl+C) and returns its exit code (-e)
  const size = `stty rows ${rows} cols ${cols} 2>/dev/null;`;
  return [SCRIPT, "-qefc", `${size} ${PYTHON_LINK} ${request.command ?? interactive}`, "/dev/null"];
}

/** The shell's env: the worker's, the image's PATH with its interpreter's folder first, the client's terminal type. */
function shellEnv(launch: WorkerLaunch, endpointName: string, request: ShellRequest): NodeJS.ProcessEnv {
  const folders = [dirname(launch.interpreter), ...IMAGE_PATH.split(":")];
  const env: NodeJS.ProcessEnv = {
    ...launch.env,
    PATH: [...new Set(folders)].join(":"),
    SVC_SHELL_PYTHON: launch.interpreter,
    SHELL: "/bin/sh",
    PS1: `(svc shell ${endpointName}) \\w \\$ `,
  };
  if (request.tty) env.TERM = request.tty.term || "xterm-256color";
  return env;
}

/** Starts a shell for the endpoint; rejects when its worker could not start (no build, a bad image, ...). */
export async function startShell(supervisor: Supervisor, store: Store, endpoint: EndpointRecord, request: ShellRequest): Promise<ShellSession> {
  const token = newSecret("wkt_");
  const w = { ...newWorker(endpoint, supervisor.configKey(endpoint), token), id: newId("sh") };
  const note = (line: string) => store.logs.append(endpoint.id, w.id, `[platform] ${line}`);
  const kill = () => {
    w.stopping = true;
    signalWorker(w, "SIGKILL"); // bwrap's child dies with it (--die-with-parent), and with it the sandbox's pid namespace
  };
  const command = shellCommand(request);
  /** What the launch held: its GPUs, its network channel (./worker-channel.ts), its cgroup (./worker-resources.ts). */
  const release = () => supervisor.local.release(w);
  let proc: ChildProcess;
  try {
    const plan = await supervisor.planFor(endpoint, w, token);
    ({ proc } = await supervisor.local.spawn(plan, w, () => w.stopping || w.exited, {
      command,
      adjust: (launch) => ({ ...launch, env: shellEnv(launch, endpoint.name, request) }),
    }));
  } catch (error) {
    release();
    throw error;
  }
  note(`shell ${w.id} opened (${request.command === undefined ? "interactive" : `-c ${JSON.stringify(request.command)}`}${request.tty ? ", terminal" : ""})`);
  proc.on("error", () => undefined); // the exit (or close) says what happened
  proc.once("exit", (code, signal) => {
    w.exited = true;
    release();
    note(`shell ${w.id} exited (${signal ? `signal ${signal}` : `code ${code}`})`);
  });
  return { id: w.id, proc, kill };
}
