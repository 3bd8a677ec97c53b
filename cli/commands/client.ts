/**
 * `svc client`: writes a typed TypeScript client for the app's deployed endpoints, from the
 * manifest `svc deploy` left in .svc/ (its parameters, return annotations and URLs).
 * docs/deploy.md, "A typed client".
 */
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import type { CAC } from "cac";
import { errors } from "../../core/errors.ts";
import { MANIFEST_FILE, readManifest } from "../../core/manifest.ts";
import { projectRoot, type CommonFlags } from "../_shared.ts";
import { renderTypedClient } from "./_typed-client.ts";

interface ClientFlags extends CommonFlags {
  out?: string;
}

export const DEFAULT_CLIENT_FILE = join(".svc", "client.ts");

/** Writes the client of the app deployed from `root`; answers the file written. */
export async function writeTypedClient(root: string, out = DEFAULT_CLIENT_FILE): Promise<string> {
  const manifestFile = join(root, ".svc", MANIFEST_FILE);
  if (!existsSync(manifestFile)) throw errors.NOT_DEPLOYED(manifestFile); // no build either: deploy builds
  const manifest = await readManifest(manifestFile);
  if (!manifest.urls || Object.keys(manifest.urls).length === 0) throw errors.NOT_DEPLOYED(manifestFile);
  const file = resolve(root, out);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, renderTypedClient({ ...manifest, urls: manifest.urls }));
  return file;
}

export function registerClient(cli: CAC): void {
  cli
    .command("client", "Write a typed TypeScript client for the deployed endpoints (one function per endpoint function and route)")
    .option("--out <file>", `Where to write it (default: ${DEFAULT_CLIENT_FILE})`)
    .option("--root <dir>", "Project folder (default: the current folder)")
    .action(async (flags: ClientFlags) => {
      const root = projectRoot(flags);
      const file = await writeTypedClient(root, flags.out);
      process.stdout.write(`wrote ${relative(process.cwd(), file) || file}: import { createClient } from it, then createClient({ apiKey }).<function>(input)\n`);
    });
}
