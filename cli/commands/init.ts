/** `svc init [name]`: scaffolds a project from templates/init/ that `svc build` builds as is. */
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve } from "node:path";
import type { CAC } from "cac";
import { packagePath } from "../../core/package-root.ts";
import { toAppName } from "../../core/config.ts";
import { errors } from "../../core/errors.ts";

export const TEMPLATE_DIR = packagePath("templates", "init");

/** Template files whose name npm would drop or act on when publishing: stored with `_`. */
const RENAMES: Record<string, string> = { _gitignore: ".gitignore" };

interface InitFlags {
  force?: boolean;
  root?: string;
}

async function templateFiles(dir = TEMPLATE_DIR, prefix = ""): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name === "__pycache__") continue;
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) files.push(...(await templateFiles(join(dir, entry.name), rel)));
    else files.push(rel);
  }
  return files.sort();
}

export interface InitResult {
  dir: string;
  name: string;
  files: string[];
}

/** Writes the template into `dir`; refuses to overwrite existing files unless `force`. */
export async function initProject(dir: string, options: { name?: string; force?: boolean } = {}): Promise<InitResult> {
  const name = toAppName(options.name ?? basename(dir));
  const plan = (await templateFiles()).map((file) => {
    const target = file
      .split("/")
      .map((part) => RENAMES[part] ?? part)
      .join("/");
    return { source: join(TEMPLATE_DIR, file), target };
  });
  const clashes = plan.filter(({ target }) => existsSync(join(dir, target))).map(({ target }) => target);
  if (clashes.length && !options.force) throw errors.INIT_WOULD_OVERWRITE(clashes);
  for (const { source, target } of plan) {
    const text = (await readFile(source, "utf8")).replaceAll("{{name}}", name);
    await mkdir(dirname(join(dir, target)), { recursive: true });
    await writeFile(join(dir, target), text);
  }
  return { dir, name, files: plan.map((p) => p.target) };
}

/** A path as the user can paste it into a POSIX shell (quoted when it holds anything but safe characters). */
const shellWord = (path: string): string => (/^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`);

export function registerInit(cli: CAC): void {
  cli
    .command("init [name]", "Create a project: a GPU queue worker, a CPU queue worker and a load-balanced API")
    .option("--force", "Overwrite existing files")
    .option("--root <dir>", "Parent folder (default: the current folder)")
    .action(async (name: string | undefined, flags: InitFlags) => {
      const base = resolve(flags.root ?? process.cwd());
      const dir = name ? resolve(base, name) : base;
      const result = await initProject(dir, { name: name ? basename(name) : undefined, force: flags.force });
      const where = relative(process.cwd(), dir);
      const lines = [
        `Created app ${result.name} in ${where ? shellWord(where) : "this folder"}:`,
        ...result.files.map((file) => `  ${file}`),
        "",
        "Next steps:",
        ...(where ? [`  cd ${shellWord(where)}`] : []),
        "  cp .env.example .env     # leave it empty for the embedded platform (it has its own key);",
        "                           # for a hosted one set PLATFORM_API_URL and PLATFORM_API_KEY",
        "  svc build                # build .svc/artifact.tar.gz",
        "  svc run                  # develop locally on http://localhost:8888",
        "  svc deploy               # deploy the endpoints",
      ];
      process.stdout.write(`${lines.join("\n")}\n`);
    });
}
