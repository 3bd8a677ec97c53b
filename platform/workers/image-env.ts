/**
 * Image environments: a worker imports what its base image gives — the stdlib, the image's
 * pre-installed set (CPU image: nothing; GPU image: torch, torchvision, torchaudio, numpy, triton
 * and what they need to import) — and its artifact, never the host's other packages, so what
 * imports here imports when deployed. Where bwrap runs, the worker runs in a sandbox
 * (./sandbox.ts); elsewhere the same package view comes from interpreter flags, with a warning
 * that files are not isolated. docs/platform.md, "Image environments".
 */
import { mkdir, readlink, symlink } from "node:fs/promises";
import { basename, join } from "node:path";
import { sha256Hex } from "../_ids.ts";
import { IMAGE_PACKAGES, imageKindOfName } from "../../core/images.ts";
import { probeInterpreter, type InterpreterView } from "./_image-probe.ts";
import { bwrapArgs, bwrapUsable, SANDBOX_APP_DIR } from "./sandbox.ts";
import { sharedAttempt } from "./_shared-attempt.ts";

/**
 * Without a sandbox: `-S` keeps the host's site folders off sys.path, then the runtime's usual
 * `site` setup runs with no site folders (exit(), help() and sitecustomize as in the image) and
 * the handler runs as `python handlers/x.py` would.
 */
const FLAGS_BOOTSTRAP =
  "import runpy, site, sys; site.PREFIXES[:] = []; site.ENABLE_USER_SITE = False; site.venv = lambda known: known; site.main(); " +
  "del sys.argv[0]; runpy.run_path(sys.argv[0], run_name='__main__')";

export interface WorkerLaunch {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** bwrap: the worker's pid arrives as `{"child-pid": N}` on fd 3. */
  sandboxed: boolean;
}

export interface LaunchRequest {
  image: string;
  /** The interpreter the image maps to (interpreter.ts or the platform's pythonForImage). */
  python: string;
  buildDir: string;
  /** Relative to the build. */
  handler: string;
  env: NodeJS.ProcessEnv;
}

export class ImageEnvironments {
  private readonly views = new Map<string, Promise<InterpreterView>>();
  private sandbox?: Promise<boolean>;

  /**
   * @param stateDir the platform's state folder: flags mode keeps its package links there.
   * @param mode "auto": bwrap where it runs; "flags": never (SVC_WORKER_SANDBOX=off).
   */
  constructor(
    private readonly stateDir: string,
    private readonly log: (line: string) => void,
    private readonly mode: "auto" | "flags" = process.env.SVC_WORKER_SANDBOX === "off" ? "flags" : "auto",
  ) {}

  /** Is the bwrap sandbox in use? Says once when it is not, and why that matters. */
  sandboxed(): Promise<boolean> {
    this.sandbox ??= (this.mode === "flags" ? Promise.resolve(false) : bwrapUsable()).then((ok) => {
      if (!ok) {
        this.log(
          "warning: workers run without a sandbox (bubblewrap's `bwrap` is " +
            `${this.mode === "flags" ? "turned off by SVC_WORKER_SANDBOX=off" : "not usable here"}): they import only their image's packages, ` +
            "but their files are not isolated (a worker can read the platform's state folder). Install the Debian package `bubblewrap` to isolate them.",
        );
      }
      return ok;
    });
    return this.sandbox;
  }

  /** The interpreter's view for an image: the GPU image's packages are probed once per interpreter. */
  view(image: string, python: string): Promise<InterpreterView> {
    const wanted = [...IMAGE_PACKAGES[imageKindOfName(image)]];
    const key = JSON.stringify([python, wanted]);
    return sharedAttempt(this.views, key, () =>
      probeInterpreter(python, wanted).then((v) => {
        if (wanted.length > 0) {
          const missing = wanted.filter((name) => !v.loaded.includes(name));
          this.log(`image ${image}: ${v.executable} gives ${v.loaded.join(", ") || "none of its packages"}` + (missing.length ? ` (not installed there: ${missing.join(", ")})` : ""));
        }
        return v;
      }),
    );
  }

  async launch(req: LaunchRequest): Promise<WorkerLaunch> {
    const view = await this.view(req.image, req.python);
    if (await this.sandboxed()) {
      // The image's packages stay where the interpreter's own `site` finds them.
      const path = [SANDBOX_APP_DIR, `${SANDBOX_APP_DIR}/site-packages`];
      return {
        command: "bwrap",
        args: bwrapArgs({
          prefixes: view.prefixes,
          hidden: view.siteDirs,
          packages: view.packages,
          buildDir: req.buildDir,
          command: [view.executable, "-s", req.handler],
        }),
        cwd: req.buildDir,
        env: { ...req.env, PYTHONPATH: path.join(":"), HOME: "/tmp", TMPDIR: "/tmp" },
        sandboxed: true,
      };
    }
    const links = view.packages.length ? [await this.linkPackages(view)] : [];
    return {
      command: view.executable,
      args: ["-s", "-S", "-c", FLAGS_BOOTSTRAP, req.handler],
      cwd: req.buildDir,
      env: { ...req.env, PYTHONPATH: [req.buildDir, join(req.buildDir, "site-packages"), ...links].join(":") },
      sandboxed: false,
    };
  }

  /** Flags mode: a folder holding links to the image's package entries only (the site folder's others stay out). */
  private async linkPackages(view: InterpreterView): Promise<string> {
    const dir = join(this.stateDir, "images", sha256Hex(JSON.stringify([view.executable, view.packages])).slice(0, 16), "site-packages");
    await mkdir(dir, { recursive: true });
    for (const entry of view.packages) {
      const link = join(dir, basename(entry));
      const existing = await readlink(link).catch(() => undefined);
      if (existing !== entry) await symlink(entry, link).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw error;
      });
    }
    return dir;
  }
}
