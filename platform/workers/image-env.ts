/**
 * Image environments: a worker imports what its base image gives — the stdlib, the image's
 * pre-installed set (CPU image: nothing; GPU image: torch, torchvision, torchaudio, numpy, triton
 * and what they need to import) — and its artifact, never the host's other packages, so what
 * imports here imports when deployed. Where bwrap runs, the worker runs in a sandbox
 * (./sandbox.ts); elsewhere the same package view comes from interpreter flags, with a warning
 * that files are not isolated. docs/platform.md, "Image environments".
 */
import { randomBytes } from "node:crypto";
import { mkdir, readlink, symlink } from "node:fs/promises";
import { basename, join } from "node:path";
import { errors } from "../../core/errors.ts";
import { sha256Hex } from "../_ids.ts";
import { IMAGE_PACKAGES, imageKindOfName } from "../../core/images.ts";
import { probeInterpreter, type InterpreterView } from "./_image-probe.ts";
import { volumeEnv, VOLUME_MOUNT_PATH } from "../volumes/mount.ts";
import { bwrapArgs, bwrapUsable, probeUser, SANDBOX_APP_DIR, type SandboxUser } from "./sandbox.ts";
import { writeSandboxEtc } from "./sandbox-etc.ts";
import { exposeBuildsTo, UNPRIVILEGED } from "./unprivileged.ts";
import { sharedAttempt } from "../_shared-attempt.ts";
import { gpuEnv, type GpuGrant } from "./gpu-assign.ts";
import { egressAvailable, NetnsPool } from "./sandbox-egress.ts";
import { channelArgs, channelEnv, netnsUsable, openChannel, type WorkerChannel } from "./worker-channel.ts";

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
  /** Without the sandbox, a platform run as root runs the worker as this user (in the sandbox, setpriv does: ./sandbox.ts). */
  user?: SandboxUser;
  /** The image's interpreter (a shell puts its folder first on PATH). */
  interpreter: string;
  /** Its own network namespace and channel to the platform (./worker-channel.ts), where it has them. */
  channel?: WorkerChannel;
}

/** `svc shell` (./shell.ts): a command instead of the handler, and what the shell changes in the launch (its env). */
export interface ShellLaunch {
  command: string[];
  adjust(launch: WorkerLaunch): WorkerLaunch;
}

/** "strict": no worker starts without the sandbox (`svc platform start --isolation strict`, SVC_ISOLATION=strict). */
export type Isolation = "auto" | "strict";

export interface LaunchRequest {
  image: string;
  /** The interpreter the image maps to (interpreter.ts or the platform's pythonForImage). */
  python: string;
  buildDir: string;
  /** A warm spare's: the platform's compiled svc runtime, shown read-only at SANDBOX_RUNTIME_DIR (./sandbox.ts). */
  runtimeDir?: string;
  /** Relative to the build. */
  handler: string;
  env: NodeJS.ProcessEnv;
  /** The worker's GPUs (./gpu-assign.ts), where it holds some. */
  gpu?: GpuGrant;
  /** The host folder of the endpoint's network volume (../volumes/mount.ts). */
  volumeDir?: string;
  /** The size of the sandbox's /tmp (./flavours.ts). */
  tmpBytes?: number;
  /** Run this instead of the handler (`svc shell`). */
  command?: string[];
  /** The host user a platform run as root runs the worker as: its app's (./uid-pool.ts). */
  user?: SandboxUser;
  /** The platform's worker socket and the worker's id, API base and kind: a sandboxed worker gets its own network (./worker-channel.ts). */
  network?: { platformSocket?: string; workerId: string; apiBase: string; lb: boolean; tunnelPorts?: number[]; egress: boolean };
}

/**
 * A sandboxed worker's variables: the request's (its volume's path as the sandbox shows it), its
 * GPUs', its channel's, and the sandbox's own paths. The image's packages stay where the
 * interpreter's own `site` finds them. A warm spare (./backends/warm-spares.ts) gets them when it is told to go.
 */
export function sandboxEnv(req: LaunchRequest, channel: WorkerChannel | undefined): NodeJS.ProcessEnv {
  return {
    ...(req.volumeDir ? volumeEnv(req.env, VOLUME_MOUNT_PATH) : req.env),
    ...gpuEnv(req.gpu, req.env),
    ...(channel && req.network ? channelEnv(channel, req.network.apiBase, req.network.lb) : {}),
    PYTHONPATH: [SANDBOX_APP_DIR, `${SANDBOX_APP_DIR}/site-packages`].join(":"),
    HOME: "/tmp",
    TMPDIR: "/tmp",
  };
}

export class ImageEnvironments {
  private readonly views = new Map<string, Promise<InterpreterView>>();
  private sandbox?: Promise<boolean>;
  /** The sandbox's /etc per worker user. */
  private readonly etc = new Map<number, { dir: string; binds: string[] }>();
  private netns?: Promise<boolean>;
  private toldNetwork = false;
  private toldEgress = false;
  /** Worker namespaces made ahead (./sandbox-egress.ts). */
  private readonly netnsPool = new NetnsPool(`${process.pid}-${randomBytes(3).toString("hex")}`);

  /**
   * @param stateDir the platform's state folder: flags mode keeps its package links there.
   * @param mode "auto": bwrap where it runs; "flags": never (SVC_WORKER_SANDBOX=off).
   */
  constructor(
    private readonly stateDir: string,
    private readonly log: (line: string) => void,
    private readonly isolation: Isolation = "auto",
    private readonly mode: "auto" | "flags" = process.env.SVC_WORKER_SANDBOX === "off" ? "flags" : "auto",
  ) {}

  /** Is the bwrap sandbox in use? Says once when it is not, and why that matters. */
  sandboxed(): Promise<boolean> {
    this.sandbox ??= (this.mode === "flags" ? Promise.resolve(false) : bwrapUsable(probeUser())).then((ok) => {
      if (!ok && this.isolation !== "strict") {
        const root = process.getuid?.() === 0;
        this.log(
          "warning: workers run without a sandbox (bubblewrap's `bwrap` is " +
            `${this.why()}): they import only their image's packages, but their files are not isolated` +
            (root
              ? " (the platform runs as root, so each app's workers run as an unprivileged host user of their own: they can read what any user can, and need an interpreter that user can run)."
              : " (a worker can read the platform's state folder).") +
            " Install the Debian package `bubblewrap` to isolate them; `--isolation strict` refuses to run workers without it.",
        );
      }
      return ok;
    });
    return this.sandbox;
  }

  private why(): string {
    return this.mode === "flags" ? "turned off by SVC_WORKER_SANDBOX=off" : "not usable here";
  }

  /** The interpreter's view for an image: the GPU image's packages are probed once per interpreter. */
  view(image: string, python: string): Promise<InterpreterView> {
    const wanted = [...IMAGE_PACKAGES[imageKindOfName(image)]];
    const key = JSON.stringify([python, wanted]);
    return sharedAttempt(this.views, key, () =>
      probeInterpreter(python, wanted).then((v) => {
        if (wanted.length > 0) {
          const missing = wanted.filter((name) => !v.loaded.includes(name));
          this.log(
            `image ${image}: ${v.executable} gives ${v.loaded.join(", ") || "none of its packages"}` +
              (missing.length ? ` (not installed there: ${missing.join(", ")})` : ""),
          );
        }
        return v;
      }),
    );
  }

  async launch(req: LaunchRequest): Promise<WorkerLaunch> {
    const view = await this.view(req.image, req.python);
    const sandboxed = await this.sandboxed();
    if (!sandboxed && this.isolation === "strict") throw errors.SANDBOX_REQUIRED(this.why());
    if (sandboxed) {
      const user = req.user ?? (process.getuid?.() === 0 ? UNPRIVILEGED : undefined); // never root
      const uid = user?.uid ?? process.getuid?.() ?? 0;
      let etc = this.etc.get(uid);
      if (!etc) this.etc.set(uid, (etc = writeSandboxEtc(this.stateDir, uid, user?.gid ?? process.getgid?.() ?? 0)));
      const channel = await this.channelFor(req);
      return {
        command: "bwrap",
        args: bwrapArgs({
          prefixes: view.prefixes,
          hidden: view.siteDirs,
          packages: view.packages,
          buildDir: req.buildDir,
          runtimeDir: req.runtimeDir,
          etc,
          user,
          volumeDir: req.volumeDir,
          command: req.command ?? [view.executable, "-s", req.handler],
          gpu: req.gpu,
          tmpBytes: req.tmpBytes,
          network: channel && channelArgs(channel),
        }),
        cwd: req.buildDir,
        env: sandboxEnv(req, channel),
        sandboxed: true,
        interpreter: view.executable,
        channel,
      };
    }
    const links = view.packages.length ? [await this.linkPackages(view)] : [];
    const root = process.getuid?.() === 0;
    if (root) await exposeBuildsTo(this.stateDir);
    return {
      command: req.command?.[0] ?? view.executable,
      args: req.command?.slice(1) ?? ["-s", "-S", "-c", FLAGS_BOOTSTRAP, req.handler],
      cwd: req.buildDir,
      env: {
        ...(req.volumeDir ? volumeEnv(req.env, req.volumeDir) : req.env),
        ...gpuEnv(req.gpu, req.env),
        PYTHONPATH: [req.buildDir, join(req.buildDir, "site-packages"), ...links].join(":"),
        ...(root ? { HOME: "/tmp" } : {}),
      },
      sandboxed: false,
      interpreter: view.executable,
      user: root ? (req.user ?? UNPRIVILEGED) : undefined,
    };
  }

  /**
   * The sandboxed worker's channel (its own network namespace), or none where that cannot be had:
   * said once; `--isolation strict` refuses the worker instead (SANDBOX_REQUIRED).
   */
  private async channelFor(req: LaunchRequest): Promise<WorkerChannel | undefined> {
    if (!req.network) return undefined;
    this.netns ??= req.network.platformSocket ? netnsUsable() : Promise.resolve(false);
    const why = req.network.platformSocket
      ? "not able to make a network namespace here"
      : "given no worker socket (the state folder's path is too long for one)";
    if (!(await this.netns)) {
      if (this.isolation === "strict") throw errors.SANDBOX_REQUIRED(`${why}: a worker's network cannot be isolated`);
      if (!this.toldNetwork)
        this.log(
          `warning: workers share the host's network (bwrap is ${why}): a worker can reach the host's loopback services. \`--isolation strict\` refuses to run workers without their own network.`,
        );
      this.toldNetwork = true;
      return undefined;
    }
    const egress = await egressAvailable();
    if (!egress && !this.toldEgress) {
      this.toldEgress = true;
      this.log(
        "warning: workers have no egress (no network but their channel to the platform): " +
          (process.getuid?.() === 0
            ? "slirp4netns is not installed. Install the Debian package `slirp4netns` (scripts/setup.sh does)."
            : "user-mode networking needs the platform to run as root."),
      );
    }
    const netns = egress
      ? await this.netnsPool.take(req.network.egress).catch((error: Error) => {
          this.log(`worker ${req.network!.workerId} has no egress: ${error.message}`); // bwrap makes its namespace instead
          return undefined;
        })
      : undefined;
    return openChannel(req.network.platformSocket!, req.network.workerId, req.network.tunnelPorts ?? [], netns, req.user);
  }

  /** The platform closes: the namespaces made ahead go. */
  close(): Promise<void> {
    return this.netnsPool.close();
  }

  /** Flags mode: a folder holding links to the image's package entries only (the site folder's others stay out). */
  private async linkPackages(view: InterpreterView): Promise<string> {
    const dir = join(this.stateDir, "images", sha256Hex(JSON.stringify([view.executable, view.packages])).slice(0, 16), "site-packages");
    await mkdir(dir, { recursive: true });
    for (const entry of view.packages) {
      const link = join(dir, basename(entry));
      const existing = await readlink(link).catch(() => undefined);
      if (existing !== entry)
        await symlink(entry, link).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== "EEXIST") throw error;
        });
    }
    return dir;
  }
}
