/**
 * `svc client`: writes a typed TypeScript client for the app's deployed endpoints, from the
 * manifest `svc deploy` left in .svc/ (its parameters, return annotations and URLs), or with
 * `--env <name>` from what that environment serves on the platform (its active build's manifest and
 * its endpoints' URLs), like the other commands' --env. docs/deploy.md, "A typed client".
 */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import type { CAC } from "cac";
import { findEnvironment, type PlatformClient } from "../../core/client/index.ts";
import { errors } from "../../core/errors.ts";
import { readDeployState } from "../../core/deploy-state.ts";
import { DEPLOY_STATE_DIR } from "../../core/deployed-endpoints.ts";
import type { Manifest } from "../../core/types.ts";
import { appName, connect, type PlatformFlags } from "../_platform.ts";
import { projectRoot } from "../_shared.ts";
import { renderTypedClient } from "./_typed-client.ts";

interface ClientFlags extends PlatformFlags {
  out?: string;
}

export const DEFAULT_CLIENT_FILE = join(".svc", "client.ts");
/** With --env, one file per environment: a staging client never overwrites production's. */
export const clientFileFor = (env?: string): string => (env ? join(".svc", `client.${env}.ts`) : DEFAULT_CLIENT_FILE);

type DeployedManifest = Manifest & { urls: Record<string, string> };

/** What the newest `svc deploy` from `root` left (core/deploy-state.ts): its build's manifest with the endpoints' URLs. */
async function localManifest(root: string): Promise<DeployedManifest> {
  const outDir = join(root, ".svc");
  const state = await readDeployState(outDir);
  if (!state || Object.keys(state.urls).length === 0) throw errors.NOT_DEPLOYED(join(outDir, DEPLOY_STATE_DIR));
  return { ...state.manifest, urls: state.urls };
}

/** What an environment serves: its active build's manifest, with the URLs of the environment's own endpoints. */
export async function environmentManifest(client: PlatformClient, app: string, env: string): Promise<DeployedManifest> {
  const { environment } = await findEnvironment(client, app, env);
  const build = environment.activeBuildId ? await client.getBuild(environment.activeBuildId) : null;
  if (!build)
    throw errors.NOT_FOUND(
      `Deployed build of environment "${environment.name}" of app "${app}"`,
      environment.name,
      `Run \`svc deploy --env ${environment.name}\` first.`,
    );
  const names = new Set(Object.keys(build.manifest.endpoints));
  const urls = Object.fromEntries(environment.endpoints.filter((e) => names.has(e.name)).map((e) => [e.name, e.url]));
  return { ...build.manifest, urls };
}

/** Writes the client of `manifest` to `out` (relative to `root`); answers the file written. */
export async function writeTypedClient(root: string, out = DEFAULT_CLIENT_FILE, manifest?: DeployedManifest): Promise<string> {
  const file = resolve(root, out);
  const deployed = manifest ?? (await localManifest(root));
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, renderTypedClient(deployed));
  return file;
}

export function registerClient(cli: CAC): void {
  cli
    .command("client", "Write a typed TypeScript client for the deployed endpoints (one function per endpoint function and route)")
    .option("--env <name>", "The environment whose endpoints it calls, as the platform serves it (default: what the last deploy from this folder wrote)")
    .option("--app <name>", "App name with --env (default: from svc.config.ts or the folder name)")
    .option("--out <file>", `Where to write it (default: ${DEFAULT_CLIENT_FILE}, with --env ${clientFileFor("<name>")})`)
    .option("--root <dir>", "Project folder (default: the current folder)")
    .action(async (flags: ClientFlags) => {
      const root = projectRoot(flags);
      let manifest: DeployedManifest | undefined;
      if (flags.env !== undefined) {
        const { client } = await connect(root);
        manifest = await environmentManifest(client, await appName(flags, "client"), String(flags.env));
      }
      const file = await writeTypedClient(root, flags.out ?? clientFileFor(flags.env), manifest);
      process.stdout.write(
        `wrote ${relative(process.cwd(), file) || file}: import { createClient } from it, then createClient({ apiKey }).<function>(input)\n`,
      );
    });
}
