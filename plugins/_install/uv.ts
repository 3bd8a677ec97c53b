/**
 * uv (a Rust installer from PyPI) for svc:pip-install: finding it, its command line for the same
 * target as pip's (Linux x86_64 manylinux ≤ 2.28 wheels, CPython of the configured version, binary
 * only), and which of the requirements files' pip options it takes. docs/deploy.md, "Dependencies: uv or pip, one cache for every app".
 */
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import { GLOBAL_FLAGS, GLOBAL_OPTIONS_WITH_VALUE } from "../_requirements.ts";

/** The platform uv resolves for: manylinux_2_28 and every older manylinux tag (pip's PLATFORM_TAGS and what they imply). */
export const UV_PLATFORM = "x86_64-manylinux_2_28";

/** pip's whole-run options (from requirements files) uv takes as they are, all but --prefer-binary; any other sends the install to pip. */
const UV_OPTIONS_WITH_VALUE = GLOBAL_OPTIONS_WITH_VALUE;
const UV_FLAGS = new Set([...GLOBAL_FLAGS].filter((flag) => flag !== "--prefer-binary"));

/** The first pip option uv does not take, or undefined when uv takes them all. */
export function optionUvLacks(pipOptions: readonly string[]): string | undefined {
  for (let i = 0; i < pipOptions.length; i++) {
    const option = pipOptions[i]!;
    if (UV_OPTIONS_WITH_VALUE.has(option)) i++;
    else if (!UV_FLAGS.has(option)) return option;
  }
  return undefined;
}

/** pip's environment settings that decide what is installed, as uv options (pip reads them itself). */
const PIP_ENV_OPTIONS: Array<[variable: string, option: string, takesValue: boolean]> = [
  ["PIP_INDEX_URL", "--index-url", true],
  ["PIP_EXTRA_INDEX_URL", "--extra-index-url", true],
  ["PIP_FIND_LINKS", "--find-links", true],
  ["PIP_TRUSTED_HOST", "--trusted-host", true],
  ["PIP_CONSTRAINT", "--constraint", true],
  ["PIP_NO_INDEX", "--no-index", false],
  ["PIP_PRE", "--pre", false],
];
const PIP_TRUE = /^(1|true|yes|on)$/i;

/** The uv options and environment that carry pip's environment settings over (PIP_FIND_LINKS=/opt/wheels → --find-links /opt/wheels). */
export function uvSettingsFromPipEnv(env: NodeJS.ProcessEnv = process.env): { args: string[]; env: NodeJS.ProcessEnv } {
  const args: string[] = [];
  for (const [variable, option, takesValue] of PIP_ENV_OPTIONS) {
    const value = env[variable]?.trim();
    if (!value) continue;
    if (!takesValue) {
      if (PIP_TRUE.test(value)) args.push(option);
    } else for (const item of value.split(/\s+/)) args.push(option, item);
  }
  // pip's CA bundle: uv reads SSL_CERT_FILE
  return { args, env: env.PIP_CERT && !env.SSL_CERT_FILE ? { SSL_CERT_FILE: env.PIP_CERT } : {} };
}

/** Install settings in a pip config file uv would not read: pip installs then, so the two never disagree (a `cert` alone is fine). */
const CONFIG_INSTALL_KEYS = /^\s*(index-url|extra-index-url|find-links|no-index|pre|constraint|trusted-host|only-binary|no-binary|prefer-binary)\s*=/m;

export function pipConfigUvIgnores(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const home = env.HOME ?? "";
  const files = [
    env.PIP_CONFIG_FILE,
    join(env.XDG_CONFIG_HOME || join(home, ".config"), "pip", "pip.conf"),
    join(home, ".pip", "pip.conf"),
    "/etc/pip.conf",
    "/etc/xdg/pip/pip.conf",
    env.VIRTUAL_ENV && join(env.VIRTUAL_ENV, "pip.conf"),
  ];
  for (const file of files) {
    if (!file || file === "/dev/null") continue;
    const text = (() => {
      try {
        return readFileSync(file, "utf8");
      } catch {
        return "";
      }
    })();
    const key = CONFIG_INSTALL_KEYS.exec(text)?.[1];
    if (key) return `${file} sets ${key}, which only pip reads`;
  }
  return undefined;
}

/** `python`: the interpreter svc runs (uv needs one to start from; never a Python uv would download). */
export function uvArgs(target: string, requirementsFile: string, pythonVersion: string, pipOptions: string[], python: string): string[] {
  return [
    "pip",
    "install",
    "--no-config",
    "--python",
    python,
    "--no-python-downloads",
    "--target",
    target,
    "--python-version",
    pythonVersion,
    "--python-platform",
    UV_PLATFORM,
    "--only-binary",
    ":all:",
    ...pipOptions,
    "-r",
    requirementsFile,
  ];
}

const executable = (file: string) => {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
};

/**
 * The uv to run: beside the real Python interpreter (where `scripts/setup.sh` and `pip install uv`
 * put it; no version-manager shim to start), else the first on PATH. Undefined when there is none.
 */
export function findUv(realPython: string, path = process.env.PATH ?? ""): string | undefined {
  const dirs = isAbsolute(realPython) ? [dirname(realPython)] : [];
  dirs.push(...path.split(delimiter).filter(Boolean));
  return dirs.map((dir) => join(dir, "uv")).find(executable);
}
