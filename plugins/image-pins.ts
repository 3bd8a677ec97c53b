/**
 * svc:image-pins — a requirement that pins a package the image pre-installs (`torch==2.3.0` beside a
 * GPU endpoint) is dropped from the artifact (svc:exclude-preinstalled): the worker imports the
 * image's own version, whatever the pin says. When that version does not satisfy the pin, the build
 * says so, naming the pin and the image's version (ctx.problem: a warning, an error under --strict).
 * The image's version is read from the interpreter the embedded platform runs the GPU image with
 * (`SVC_PYTHON_GPU`, else /usr/bin/python3, else python3: platform/workers/interpreter.ts), once per
 * run, with the PEP 440 rules of `packaging` (pip's vendored copy where it is not installed).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { errors } from "../core/errors.ts";
import { HOOK_ORDER } from "../core/pipeline.ts";
import type { SvcPlugin } from "../core/types.ts";

export const PLUGIN_NAME = "svc:image-pins";

/** For each requirement line: [name, the installed version or null, does it satisfy the line's specifier]. */
const PROBE = `
import json, sys
from importlib import metadata
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
out = []
for line in json.loads(sys.argv[1]):
    req = Requirement(line)
    try:
        version = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        version = None
    out.append([req.name, version, version is not None and req.specifier.contains(version, prereleases=True)])
print(json.dumps(out))
`;

/** The interpreter the embedded platform gives the GPU image where the machine has no CUDA Python of its own. */
export function gpuImagePython(env: NodeJS.ProcessEnv = process.env): string {
  return env.SVC_PYTHON_GPU || (existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3");
}

function probe(python: string, lines: string[]): Promise<Array<[string, string | null, boolean]> | undefined> {
  return new Promise((resolve) =>
    execFile(python, ["-c", PROBE, JSON.stringify(lines)], { timeout: 60_000 }, (error, stdout) => {
      try {
        resolve(error ? undefined : (JSON.parse(stdout) as Array<[string, string | null, boolean]>));
      } catch {
        resolve(undefined);
      }
    }),
  );
}

export function imagePins(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      // after svc:exclude-preinstalled (AFTER_BUILTINS), which fills ctx.excluded
      pipeline.hooks.resolveDependencies.tapPromise({ name: PLUGIN_NAME, stage: HOOK_ORDER.AFTER_BUILTINS + 1 }, async (requirements, ctx) => {
        const pinned = ctx.excluded.filter((r) => r.reason === "preinstalled" && /[<>=!~]/.test(r.spec.split(";")[0]!));
        if (pinned.length === 0) return requirements;
        const python = gpuImagePython();
        const found = await probe(
          python,
          pinned.map((r) => r.spec),
        );
        if (!found) {
          ctx.logger.debug(`${PLUGIN_NAME}: could not read the image's package versions with ${python}`);
          return requirements;
        }
        pinned.forEach((requirement, i) => {
          const [, version, satisfied] = found[i]!;
          if (!satisfied) ctx.problem(errors.IMAGE_PIN_IGNORED(requirement.spec, requirement.source, requirement.name, version, python));
        });
        return requirements;
      });
    },
  };
}
