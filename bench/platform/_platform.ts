/**
 * The platform under benchmark as users run it: the built package (`npm pack`, plain node;
 * bench/cli/_built-package.ts) in the foreground, `svc platform start --no-rate-limits` (the hosted
 * limits would cap the throughput runs), with the node flags `svc` starts its background platform
 * with. From sources, tsx adds helpers of its own to every closure (docs/platform.md, "Measuring").
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PLATFORM_NODE_FLAGS } from "../../platform/ensure.ts";
import { builtPackage } from "../cli/_built-package.ts";

export interface BenchPlatform {
  child: ChildProcess;
  url: string;
  apiKey: string;
  /** The platform's own process (its workers are its descendants). */
  pid: number;
}

/**
 * Packs this checkout under `dir` and starts its platform there; BENCH_NODE_ARGS adds node flags.
 * `bin` reuses a package already built, `stateDir` (default `<dir>/platform`) lets several run side by side.
 */
export async function startBuiltPlatform(
  dir: string,
  { env = process.env, bin = builtPackage(dir), stateDir = join(dir, "platform") }: { env?: NodeJS.ProcessEnv; bin?: string; stateDir?: string } = {},
): Promise<BenchPlatform> {
  const nodeArgs = [...PLATFORM_NODE_FLAGS, ...(process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? [])];
  const args = [...nodeArgs, bin, "platform", "start", "--dir", stateDir, "--port", "0", "--no-rate-limits", "--json"];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"], env });
  const started = await new Promise<{ url: string; pid: number; apiKeyFile: string }>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk;
      try {
        resolve(JSON.parse(out));
      } catch {
        // not the whole JSON yet
      }
    });
    child.once("exit", (code) => reject(new Error(`the platform exited (${code})`)));
  });
  return { child, url: started.url, apiKey: readFileSync(started.apiKeyFile, "utf8").trim(), pid: started.pid };
}
