/** `svc platform start | stop | status`: the embedded platform on this machine. */
import type { CAC } from "cac";
import { join } from "node:path";
import { errors } from "../../core/errors.ts";
import { parsePort, printJson } from "../_shared.ts";
import { workersFromEnv } from "../../platform/local.ts";

interface PlatformCommandFlags {
  port?: number | string;
  host?: string;
  detach?: boolean;
  dir?: string;
  json?: boolean;
  /** `--no-rate-limits` sets it false. */
  rateLimits?: boolean;
  /** `--isolation strict`: no worker without the sandbox. */
  isolation?: string;
  /** `--workers ray --ray-address <url>`: workers as Ray jobs. */
  workers?: string;
  rayAddress?: string;
  rayPlatformUrl?: string;
  rayVolumes?: string;
}

const DEFAULT_PORT = 8787;

function usageHint(url: string, keyFile: string): string {
  return [
    `The API key is in ${keyFile} (readable only by you). To use this platform from a shell or another tool:`,
    `  export PLATFORM_API_KEY=$(cat ${keyFile})`,
    `  export PLATFORM_API_URL=${url}`,
    "svc commands find the embedded platform without these when PLATFORM_API_URL is unset.",
  ].join("\n");
}

async function start(flags: PlatformCommandFlags): Promise<void> {
  const { platformDir, readState, isAlive, writeState, removeState, API_KEY_FILE, runningPlatform, startDetached } = await import("../../platform/local.ts");
  const dir = platformDir(flags.dir);
  const host = flags.host ?? "127.0.0.1";
  const port = parsePort(flags.port, DEFAULT_PORT, "platform");
  const running = await runningPlatform(dir);
  if (running) throw errors.PLATFORM_ALREADY_RUNNING(dir, running.url, running.pid);
  const keyFile = join(dir, API_KEY_FILE);
  // --no-rate-limits is the env switch, so that a detached platform inherits it (docs/platform.md).
  if (flags.rateLimits === false) process.env.SVC_PLATFORM_RATE_LIMITS = "off";
  if (flags.isolation !== undefined) {
    if (flags.isolation !== "strict" && flags.isolation !== "auto")
      throw errors.CLI_USAGE(`--isolation takes strict or auto, not "${flags.isolation}".`, "platform");
    process.env.SVC_ISOLATION = flags.isolation; // the env form, inherited by a detached platform
  }
  workersFlagsToEnv(flags);

  if (flags.detach) {
    const started = await startDetached({ dir, host, port, portFallback: false }); // the port given (or 8787) or PORT_IN_USE, as in the foreground
    if (flags.json) return printJson({ ok: true, url: started.url, pid: started.pid, dir, apiKeyFile: keyFile });
    process.stdout.write(`svc platform running in the background at ${started.url} (pid ${started.pid}, data in ${dir})\n${usageHint(started.url, keyFile)}\n`);
    return;
  }

  const stale = readState(dir);
  if (stale && !isAlive(stale.pid)) removeState(dir, stale.pid);
  const { startPlatform } = await import("../../platform/index.ts");
  const platform = await startPlatform({ dataDir: dir, host, port });
  writeState(dir, { pid: process.pid, url: platform.url, startedAt: new Date().toISOString() });
  if (flags.json) printJson({ ok: true, url: platform.url, pid: process.pid, dir, apiKeyFile: keyFile, firstStart: platform.firstStart });
  else {
    process.stdout.write(`svc platform listening at ${platform.url} (data in ${dir}); Ctrl+C stops it\n`);
    if (platform.firstStart) process.stdout.write(`Created an API key for this platform.\n${usageHint(platform.url, keyFile)}\n`);
    else process.stdout.write(`API key: ${keyFile}\n`);
  }

  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`${signal}: stopping the platform…\n`);
      void platform
        .close()
        .catch((error) => process.stderr.write(`error while stopping: ${(error as Error).message}\n`))
        .finally(() => {
          removeState(dir);
          resolve();
        });
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    process.once("SIGHUP", stop);
  });
}

/** --workers and --ray-*: their env form (SVC_WORKERS, SVC_RAY_*), inherited by a detached platform; checked here. */
function workersFlagsToEnv(flags: PlatformCommandFlags): void {
  const set = (name: string, value: string | undefined) => value !== undefined && (process.env[name] = String(value));
  set("SVC_WORKERS", flags.workers);
  set("SVC_RAY_ADDRESS", flags.rayAddress);
  set("SVC_RAY_PLATFORM_URL", flags.rayPlatformUrl);
  set("SVC_RAY_VOLUMES", flags.rayVolumes);
  workersFromEnv();
}

async function stop(flags: PlatformCommandFlags): Promise<void> {
  const { platformDir, readState, isAlive, removeState } = await import("../../platform/local.ts");
  const dir = platformDir(flags.dir);
  const state = readState(dir);
  if (!state || !isAlive(state.pid)) {
    if (state) removeState(dir, state.pid);
    if (flags.json) return printJson({ ok: true, stopped: false, running: false });
    process.stdout.write(`No platform is running for ${dir}.\n`);
    return;
  }
  process.kill(state.pid, "SIGTERM");
  // A graceful stop: running jobs finish first (docs/platform.md, "Stopping": 15 s at most by default).
  const deadline = Date.now() + 30_000;
  while (isAlive(state.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (isAlive(state.pid)) {
    process.kill(state.pid, "SIGKILL");
    removeState(dir, state.pid);
  }
  if (flags.json) return printJson({ ok: true, stopped: true, pid: state.pid, url: state.url });
  process.stdout.write(`Stopped the platform at ${state.url} (pid ${state.pid}).\n`);
}

async function status(flags: PlatformCommandFlags): Promise<void> {
  const { platformDir, readState, API_KEY_FILE, runningPlatform } = await import("../../platform/local.ts");
  const dir = platformDir(flags.dir);
  const running = await runningPlatform(dir);
  const keyFile = join(dir, API_KEY_FILE);
  // Like `systemctl status`: nothing running is a non-zero exit, so scripts can test it.
  if (!running) process.exitCode = 1;
  const { fetchGpuStatus, formatGpuStatus } = await import("./_gpu-status.ts");
  const { fetchLimitsStatus, formatLimitsStatus } = await import("./_limits-status.ts");
  const { fetchClusterStatus, formatClusterStatus } = await import("./_cluster-status.ts");
  const [gpus, cluster, limits] = running
    ? await Promise.all([
        fetchGpuStatus(running.url, running.apiKey),
        fetchClusterStatus(running.url, running.apiKey),
        fetchLimitsStatus(running.url, running.apiKey),
      ])
    : [];
  if (flags.json) {
    return printJson(
      running
        ? {
            ok: true,
            running: true,
            url: running.url,
            pid: running.pid,
            dir,
            apiKeyFile: keyFile,
            gpus: gpus ?? null,
            cluster: cluster ?? null,
            limits: limits ?? null,
          }
        : { ok: true, running: false, dir, lastState: readState(dir) ?? null },
    );
  }
  if (!running) {
    process.stdout.write(`No platform is running for ${dir}. Start one with \`svc platform start\` (or --detach).\n`);
    return;
  }
  process.stdout.write(
    `svc platform running at ${running.url} (pid ${running.pid}, data in ${dir})\nAPI key: ${keyFile}\n${gpus ? formatGpuStatus(gpus) : ""}${cluster ? formatClusterStatus(cluster) : ""}${limits ? formatLimitsStatus(limits) : ""}`,
  );
}

export function registerPlatform(cli: CAC): void {
  cli
    .command("platform <action>", "The embedded platform on this machine: start | stop | status")
    .option("--port <port>", "Port to listen on (start)", { default: DEFAULT_PORT })
    .option("--host <host>", "Address to listen on (start)", { default: "127.0.0.1" })
    .option("--detach", "Run in the background (start)")
    .option("--no-rate-limits", "Turn off the hosted platform's rate limits, for local load tests (start; also SVC_PLATFORM_RATE_LIMITS=off)")
    .option(
      "--isolation <mode>",
      "strict: refuse to start workers without the bwrap sandbox or their resource limits (start; also SVC_ISOLATION=strict; default auto)",
    )
    .option("--workers <backend>", "Where workers run: local (processes on this machine, the default) or ray (Ray jobs; also SVC_WORKERS) (start)")
    .option("--ray-address <url>", "The Ray head's dashboard, http://<head>:8265, for --workers ray (start; also SVC_RAY_ADDRESS)")
    .option("--ray-platform-url <url>", "This platform's URL as the Ray nodes reach it (start; default: the URL it listens on; also SVC_RAY_PLATFORM_URL)")
    .option("--ray-volumes <dir>", "Where every Ray node mounts this platform's volumes folder, for endpoints with a volume (start; also SVC_RAY_VOLUMES)")
    .option("--dir <dir>", "State folder (default: $SVC_PLATFORM_DIR or ~/.svc/platform)")
    .option("--json", "Print the result as JSON")
    .action(async (action: string, flags: PlatformCommandFlags) => {
      switch (action) {
        case "start":
          return start(flags);
        case "stop":
          return stop(flags);
        case "status":
          return status(flags);
        default:
          throw errors.CLI_USAGE(`Unknown action "${action}": use svc platform start | stop | status.`, "platform");
      }
    });
}
