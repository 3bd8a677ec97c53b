/**
 * What `svc deploy` leaves in a project, apart from the build's manifest so that a later
 * `svc build`, `svc run` or `svc deploy --env other` does not drop it: one file per environment,
 * `.svc/deployments/<environment>.json`, with the platform, the build that environment switched to,
 * its endpoints' URLs and that build's manifest (what the endpoints serve, not what the folder holds
 * now). `svc client`, `svc shell` (./deployed-endpoints.ts) and scripts outside workers read it.
 * docs/deploy.md, "Deploy state".
 */
import { mkdir, readdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { formatZodIssues, manifestSchema, type Manifest } from "./manifest.ts";
import { errors } from "./errors.ts";
import { DEPLOY_STATE_DIR } from "./deployed-endpoints.ts";

export const deployStateFile = (outDir: string, environment: string): string => join(outDir, DEPLOY_STATE_DIR, `${environment}.json`);

const deployStateSchema = z.object({
  version: z.literal(1),
  app: z.string(),
  environment: z.string(),
  /** The platform's API URL the deploy used. */
  platform: z.string(),
  buildId: z.string(),
  deployedAt: z.string(),
  /** Endpoint name → URL. */
  urls: z.record(z.string(), z.string()),
  manifest: manifestSchema,
});

export type DeployState = z.infer<typeof deployStateSchema> & { manifest: Manifest };

/** Writes the environment's state (whole, through a rename: a reader never sees half a file). */
export async function writeDeployState(outDir: string, state: Omit<DeployState, "version">): Promise<string> {
  const file = deployStateFile(outDir, state.environment);
  await mkdir(join(outDir, DEPLOY_STATE_DIR), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify({ version: 1, ...state }, null, 2)}\n`);
  await rename(temporary, file);
  return file;
}

async function readState(file: string): Promise<DeployState> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    throw errors.MANIFEST_INVALID((error as Error).message, file);
  }
  const parsed = deployStateSchema.safeParse(value);
  if (!parsed.success) throw errors.MANIFEST_INVALID(formatZodIssues(parsed.error), file);
  return parsed.data;
}

/** The state of `environment`, or (none given) of the newest deploy from this folder; undefined when there is none. */
export async function readDeployState(outDir: string, environment?: string): Promise<DeployState | undefined> {
  const dir = join(outDir, DEPLOY_STATE_DIR);
  const names = await readdir(dir).catch(() => [] as string[]);
  const files = environment !== undefined ? names.filter((n) => n === `${environment}.json`) : names.filter((n) => n.endsWith(".json"));
  const states = await Promise.all(files.map((name) => readState(join(dir, name))));
  return states.sort((a, b) => b.deployedAt.localeCompare(a.deployedAt))[0];
}
