/** The CLI run as users run it (`node bin/svc.mjs …`): its exit code and output, never a rejection. */
import { execFile } from "node:child_process";

export const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: NodeJS.ProcessEnv;
  timeout?: number;
  maxBuffer?: number;
}

export const runSvc = (args: string[], { env = process.env, timeout = 60_000, maxBuffer }: CliOptions = {}): Promise<CliResult> =>
  new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env, timeout, maxBuffer }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
