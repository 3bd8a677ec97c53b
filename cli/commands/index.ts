import type { CAC } from "cac";

type Register = (cli: CAC) => void;

/**
 * Every command, in the order `svc --help` lists them. Each is imported only when it runs, so
 * `svc build` does not load the platform, the dev server and their libraries.
 */
export const commands: Record<string, () => Promise<Register>> = {
  init: () => import("./init.ts").then((m) => m.registerInit),
  run: () => import("./run.ts").then((m) => m.registerRun),
  build: () => import("./build.ts").then((m) => m.registerBuild),
  deploy: () => import("./deploy.ts").then((m) => m.registerDeploy),
  undeploy: () => import("./undeploy.ts").then((m) => m.registerUndeploy),
  history: () => import("./history.ts").then((m) => m.registerHistory),
  rollback: () => import("./rollback.ts").then((m) => m.registerRollback),
  env: () => import("./env.ts").then((m) => m.registerEnv),
  app: () => import("./app.ts").then((m) => m.registerApp),
  platform: () => import("./platform.ts").then((m) => m.registerPlatform),
  secret: () => import("./secret.ts").then((m) => m.registerSecret),
  key: () => import("./key.ts").then((m) => m.registerKey),
  audit: () => import("./audit.ts").then((m) => m.registerAudit),
  client: () => import("./client.ts").then((m) => m.registerClient),
  logs: () => import("./logs.ts").then((m) => m.registerLogs),
  volume: () => import("./volume.ts").then((m) => m.registerVolume),
  schedule: () => import("./schedule.ts").then((m) => m.registerSchedule),
  worker: () => import("./worker.ts").then((m) => m.registerWorker),
  shell: () => import("./shell.ts").then((m) => m.registerShell),
};

/**
 * `svc --help`'s command list, as each command registers it with cac ([usage, description]): the
 * top-level help prints it without importing any command (test/cli/help.test.ts keeps it in step).
 */
export const usage: Record<string, readonly [string, string]> = {
  init: ["init [name]", "Create a project: a GPU queue worker, a CPU queue worker and a load-balanced API"],
  run: ["run", "Start the local development server (functions run on the platform as live- endpoints)"],
  build: ["build", "Build the app into .svc/artifact.tar.gz (no upload)"],
  deploy: ["deploy", "Build, upload, provision and configure the app's endpoints on the platform"],
  undeploy: ["undeploy", "Delete the app's endpoints in an environment"],
  history: ["history", "List the deploys and rollbacks of an environment, newest first"],
  rollback: ["rollback", "Switch an environment back to an earlier build (default: the previous one)"],
  env: ["env <action> [name]", "Manage the app's environments: list | get <name> | create <name> | delete <name>"],
  app: ["app <action> [name]", "Manage apps on the platform: list | get <name> | create <name> | delete <name>"],
  platform: ["platform <action>", "The embedded platform on this machine: start | stop | status"],
  secret: ["secret <action> [name]", "Manage secrets on the platform: create <name> (value from stdin or --from-env) | list | delete <name>"],
  key: ["key <action> [name]", "Named API keys with a role and scope: create <name> --role R [--app A] [--env E] | list | revoke <name>"],
  audit: ["audit", "Show who deployed, rolled back, deleted or changed keys and secrets, newest first"],
  client: ["client", "Write a typed TypeScript client for the deployed endpoints (one function per endpoint function and route)"],
  logs: ["logs <endpoint>", "Show an endpoint's worker output (print(), tracebacks); also of one deleted in the last 24 hours"],
  volume: ["volume <action> [...args]", "Network volumes (model weights): create | list | get | delete | ls | upload | download | rm | credentials"],
  schedule: ["schedule <action>", "Scheduled endpoints (schedule=): list, with their last and next runs"],
  worker: ["worker <action>", "Run one worker of a platform on this node (what a Ray job runs): launch"],
  shell: ["shell <endpoint>", "Open a shell (or run one command) in what an endpoint's worker sees: its image, /app, volume, env and sandbox"],
};

/** The loader of the command this command line names, or none (then the top-level help or an unknown command). */
export function commandFor(argv: string[]): (() => Promise<Register>) | undefined {
  const name = argv.find((arg) => !arg.startsWith("-"));
  return name && Object.hasOwn(commands, name) ? commands[name] : undefined;
}

/** The top-level help, in cac's layout, from the static table. */
export function helpText(version: string): string {
  const rows = Object.keys(commands).map((name) => usage[name] ?? ([name, ""] as const));
  const width = Math.max(...rows.map(([left]) => left.length));
  return [
    `svc/${version}`,
    "",
    "Usage:",
    "  $ svc <command> [options]",
    "",
    "Commands:",
    ...rows.map(([left, description]) => `  ${left.padEnd(width)}  ${description}`.trimEnd()),
    "",
    "For more info, run any command with the `--help` flag:",
    ...Object.keys(commands).map((name) => `  $ svc ${name} --help`),
    "",
    "Options:",
    "  -h, --help     Display this message",
    "  -v, --version  Display version number",
    "",
  ].join("\n");
}
