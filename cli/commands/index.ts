import type { CAC } from "cac";

type Register = (cli: CAC) => void;

/**
 * Every command, in the order `svc --help` lists them. Each is imported only when it runs (or for
 * the full help), so `svc build` does not load the platform, the dev server and their libraries.
 */
export const commands: Record<string, () => Promise<Register>> = {
  init: () => import("./init.ts").then((m) => m.registerInit),
  run: () => import("./run.ts").then((m) => m.registerRun),
  build: () => import("./build.ts").then((m) => m.registerBuild),
  deploy: () => import("./deploy.ts").then((m) => m.registerDeploy),
  undeploy: () => import("./undeploy.ts").then((m) => m.registerUndeploy),
  env: () => import("./env.ts").then((m) => m.registerEnv),
  app: () => import("./app.ts").then((m) => m.registerApp),
  platform: () => import("./platform.ts").then((m) => m.registerPlatform),
};

/** The loaders needed for this command line: the named command's, or all of them. */
export function commandsFor(argv: string[]): Array<() => Promise<Register>> {
  const name = argv.find((arg) => !arg.startsWith("-"));
  return name && Object.hasOwn(commands, name) ? [commands[name]!] : Object.values(commands);
}
