/**
 * The console's static page, script and styles. The published package ships them prebuilt in
 * dist/console/ (`npm run build` runs scripts/build-console.ts); a source checkout builds them from
 * ui/ with esbuild on the first request (never a stale bundle, no build step, as bin/svc.mjs runs
 * the sources). uPlot is bundled in: no CDN, the console works offline (docs/console.md).
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { FROM_SOURCES, packagePath } from "../../core/package-root.ts";

export interface ConsoleAssets {
  html: string;
  js: string;
  css: string;
}

export const UI_DIR = packagePath("platform", "console", "ui");
/** Where `npm run build` puts them (dist/console/), as found from sources and from the build this module is part of. */
export const BUILT_DIR = FROM_SOURCES ? packagePath("dist", "console") : fileURLToPath(new URL("console", import.meta.url));

/** Bundles ui/main.ts (its CSS, uPlot's included, comes out beside it) into memory. */
export async function buildConsoleAssets(): Promise<ConsoleAssets> {
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [`${UI_DIR}/main.ts`],
    bundle: true,
    minify: true,
    format: "iife",
    target: "es2020",
    outdir: "out",
    entryNames: "console",
    write: false,
    logLevel: "silent",
  });
  const text = (ext: string) => result.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? "";
  return { html: await readFile(`${UI_DIR}/index.html`, "utf8"), js: text(".js"), css: text(".css") };
}

async function readBuilt(): Promise<ConsoleAssets> {
  const [html, js, css] = await Promise.all(["index.html", "console.js", "console.css"].map((f) => readFile(`${BUILT_DIR}/${f}`, "utf8")));
  return { html: html!, js: js!, css: css! };
}

let loading: Promise<ConsoleAssets> | undefined;

/** From sources, and from a build without the console in a checkout (the test suite's): bundled from ui/. */
const fromUi = () => existsSync(UI_DIR) && (FROM_SOURCES || !existsSync(BUILT_DIR));

/** The assets, loaded or built once per process; a failed build is tried again on the next request. */
export function consoleAssets(): Promise<ConsoleAssets> {
  loading ??= (fromUi() ? buildConsoleAssets() : readBuilt()).catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}
