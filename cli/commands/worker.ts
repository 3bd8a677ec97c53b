/**
 * `svc worker launch`: runs one worker of a platform on this machine, what the platform's Ray
 * backend makes each Ray job's entrypoint (platform/workers/backends/launcher.ts). It reads
 * SVC_WORKER_ID, SVC_LAUNCH_TICKET and SVC_API_BASE (the job's variables) and exits with the
 * worker's exit code. docs/platform.md, "Workers on a Ray cluster".
 */
import type { CAC } from "cac";
import { errors } from "../../core/errors.ts";

export function registerWorker(cli: CAC): void {
  cli.command("worker <action>", "Run one worker of a platform on this node (what a Ray job runs): launch").action(async (action: string) => {
    if (action !== "launch") throw errors.CLI_USAGE(`Unknown action "${action}": use svc worker launch.`, "worker");
    const { launchWorker } = await import("../../platform/index.ts");
    process.exitCode = await launchWorker();
  });
}
