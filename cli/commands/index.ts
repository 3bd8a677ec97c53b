import type { CAC } from "cac";
import { registerApp } from "./app.ts";
import { registerBuild } from "./build.ts";
import { registerDeploy } from "./deploy.ts";
import { registerEnv } from "./env.ts";
import { registerInit } from "./init.ts";
import { registerPlatform } from "./platform.ts";
import { registerRun } from "./run.ts";
import { registerUndeploy } from "./undeploy.ts";

/** Every command, in the order `svc --help` lists them. */
export const commands: Array<(cli: CAC) => void> = [
  registerInit,
  registerRun,
  registerBuild,
  registerDeploy,
  registerUndeploy,
  registerEnv,
  registerApp,
  registerPlatform,
];
