/**
 * The one error catalogue (in the style of rollup's logs.ts): every error svc raises on purpose is
 * made here, with a stable code, a message that says what to do, and the place it applies to.
 */
import { firstStackFrame, mappedStack } from "./_stack.ts";
import type { SourceLocation } from "./endpoint-types.ts";
import { formatBytes } from "./format-bytes.ts";
import { packagePath } from "./package-root.ts";

/**
 * Where a remedy sends the reader: the doc as svc ships it (package.json `files` holds docs/), by its
 * path on this machine — the checkout's or the installed package's — so a user of the package can
 * open it; `section` names the heading.
 */
export const docRef = (file: string, section?: string): string => `${packagePath("docs", file)}${section ? `, "${section}"` : ""}`;

export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly file?: string;
  readonly line?: number;
  /** What the user should do about it. */
  readonly remedy?: string;
  /** Suggested HTTP status when a server reports it. */
  readonly status: number;
  /** Seconds a client should wait before trying again (a server answers it as `Retry-After`). */
  readonly retryAfterS?: number;
  /** PLUGIN_ERROR: the plugin and the hook that threw, and the thrown error's own code (as rollup's logPluginError). */
  readonly plugin?: string;
  readonly hook?: string;
  readonly pluginCode?: string;

  constructor(
    code: ErrorCode,
    message: string,
    extra: {
      remedy?: string;
      loc?: SourceLocation;
      status?: number;
      retryAfterS?: number;
      cause?: unknown;
      plugin?: { name: string; hook: string; code?: string };
    } = {},
  ) {
    const where = extra.loc ? `${extra.loc.file}:${extra.loc.line}: ` : "";
    super(`${where}${message}${extra.remedy ? `\n  → ${extra.remedy}` : ""}`, { cause: extra.cause });
    this.name = "SvcError";
    this.code = code;
    this.file = extra.loc?.file;
    this.line = extra.loc?.line;
    this.remedy = extra.remedy;
    this.status = extra.status ?? 400;
    if (extra.retryAfterS !== undefined) this.retryAfterS = extra.retryAfterS;
    if (extra.plugin) {
      this.plugin = extra.plugin.name;
      this.hook = extra.plugin.hook;
      this.pluginCode = extra.plugin.code;
    }
  }

  toJSON() {
    return {
      code: this.code,
      message: this.message,
      file: this.file,
      line: this.line,
      remedy: this.remedy,
      plugin: this.plugin,
      hook: this.hook,
      pluginCode: this.pluginCode,
    };
  }
}

export const isSvcError = (error: unknown): error is SvcError => error instanceof SvcError;

/**
 * What a plugin throws to refuse a build on purpose, in the catalogue's style: an Error with a
 * string `code` and `remedy` (and optionally `file`, `line`). `pluginError()` makes one; a plugin
 * that does not import svc can set the fields itself.
 */
export interface PluginVerdict extends Error {
  code: string;
  remedy: string;
  file?: string;
  line?: number;
}

export function pluginError(code: string, message: string, extra: { remedy: string; file?: string; line?: number }): PluginVerdict {
  return Object.assign(new Error(message), { code, ...extra });
}

const isVerdict = (error: unknown): error is PluginVerdict =>
  error instanceof Error && typeof (error as Partial<PluginVerdict>).code === "string" && typeof (error as Partial<PluginVerdict>).remedy === "string";

/** What a plugin threw, as svc reports it: its own catalogue errors as they are, a verdict as PLUGIN_REFUSED, anything else as the crash PLUGIN_ERROR. */
export function fromPlugin(error: unknown, plugin: string, hook: string): unknown {
  if (isSvcError(error)) return error;
  return isVerdict(error) ? errors.PLUGIN_REFUSED(plugin, hook, error) : errors.PLUGIN_ERROR(plugin, hook, error);
}

export type ErrorCode = keyof typeof errors;

/** The docs sections remedies point to, each written once. */
const DOCS = {
  endpointSignature: docRef("contracts.md", "3. Decorator arguments"),
  limits: docRef("platform.md", "Limits"),
  replacingBuiltin: docRef("plugins.md", "Replacing a built-in"),
  resources: docRef("platform.md", "Resources"),
  webhooks: docRef("platform.md", "Webhooks"),
  threatModel: docRef("platform.md", "Threat model"),
};

const AUTH_REMEDY = "Check that PLATFORM_API_KEY is set correctly, in .env or exported in your shell.";
/** Remedies of a NOT_FOUND app or environment (the name is a deploy's --app / --env, or the folder name). */
export const APPS_REMEDY = "`svc app list` shows the apps on this platform; `svc deploy` creates the app.";
export const ENVIRONMENTS_REMEDY = "`svc env list` shows the app's environments; pass one with --env <name>.";

/**
 * Builders, one per code: by area, in the order a user meets them (config, build, deploy, platform,
 * dev server, command line), and alphabetical inside an area. A heading names the area's docs page.
 */
export const errors = {
  // config and plugins (docs/plugins.md)
  CONFIG_INVALID: (issues: string, file?: string) =>
    new SvcError("CONFIG_INVALID", `Invalid svc config${file ? ` in ${file}` : ""}: ${issues}`, {
      remedy: "Fix the field named above; see defineConfig's types for the allowed shape.",
    }),
  CONFIG_LOAD_FAILED: (file: string, cause: unknown) =>
    new SvcError("CONFIG_LOAD_FAILED", `Could not load ${file}: ${String((cause as Error)?.message ?? cause)}`, {
      remedy: "Make sure the config file compiles and exports a config (export default defineConfig({...})).",
      cause,
    }),
  PLUGIN_ERROR: (plugin: string, hook: string, cause: unknown) => {
    const thrown = cause as { message?: unknown; code?: unknown; stack?: unknown } | undefined;
    const code = typeof thrown?.code === "string" || typeof thrown?.code === "number" ? String(thrown.code) : undefined;
    const stack = mappedStack(cause);
    const at = stack ? firstStackFrame(stack) : undefined;
    return new SvcError(
      "PLUGIN_ERROR",
      `Plugin "${plugin}" failed in hook "${hook}": ${String(thrown?.message ?? cause)}${code ? ` [${code}]` : ""}${at ? `\n  at ${at}` : ""}`,
      {
        remedy: `Fix the plugin or report it to its author; remove "${plugin}" from plugins in svc.config.ts (or add it to disablePlugins) to build without it.`,
        cause,
        plugin: { name: plugin, hook, code },
      },
    );
  },
  PLUGIN_HOOK_NOT_PROMISE: (plugin: string, hook: string) =>
    new SvcError("PLUGIN_HOOK_NOT_PROMISE", `Plugin "${plugin}" tapped hook "${hook}" with tapPromise but its callback did not return a promise.`, {
      remedy: "Make the callback async (or return a Promise), or use tap() for synchronous work.",
    }),
  PLUGIN_INVALID: (name: string, why: string) =>
    new SvcError("PLUGIN_INVALID", `Plugin "${name}" is not a valid svc plugin: ${why}.`, {
      remedy: "A plugin is an object { name, apply(pipeline) }, or a package whose default export makes one.",
    }),
  PLUGIN_NOT_FOUND: (name: string, root: string) =>
    new SvcError("PLUGIN_NOT_FOUND", `Plugin package "${name}" was not found from ${root}.`, {
      remedy: `Install it in the app (npm install -D ${name}) or remove it from plugins in svc.config.ts.`,
    }),
  PLUGIN_OPTIONS_INVALID: (name: string, issues: string, known: string[]) =>
    new SvcError("PLUGIN_OPTIONS_INVALID", `Plugin "${name}" was given options it does not take: ${issues}.`, {
      remedy: `Fix the options in svc.config.ts (${known.length ? `"${name}" takes ${known.join(", ")}` : `see "${name}"'s README`}).`,
    }),
  /** A plugin's verdict, not a crash: it threw an error with its own `code` and `remedy` (docs/plugins.md, "Errors"). */
  PLUGIN_REFUSED: (plugin: string, hook: string, verdict: PluginVerdict) =>
    new SvcError("PLUGIN_REFUSED", `Plugin "${plugin}" refused the build in hook "${hook}": [${verdict.code}] ${verdict.message}`, {
      remedy: verdict.remedy,
      loc: typeof verdict.file === "string" ? { file: verdict.file, line: typeof verdict.line === "number" ? verdict.line : 0 } : undefined,
      cause: verdict,
      plugin: { name: plugin, hook, code: verdict.code },
    }),
  PROJECT_NOT_FOUND: (root: string) =>
    new SvcError("PROJECT_NOT_FOUND", `Project folder ${root} does not exist or is not a folder.`, {
      remedy: "Run svc from the project folder or pass --root <folder>; `svc init` creates a project.",
    }),
  STAGE_UNFILLED: (stage: string, produces: string, disabled: string[], file?: string) =>
    new SvcError(
      "STAGE_UNFILLED",
      `No plugin taps the "${stage}" stage, which produces ${produces}${disabled.length ? `: disablePlugins${file ? ` in ${file}` : ""} removes ${disabled.map((n) => `"${n}"`).join(", ")}` : ""}.`,
      {
        remedy: `Remove the stage's built-in from disablePlugins, or add a plugin that taps "${stage}" in its place (${DOCS.replacingBuiltin}).`,
      },
    ),

  // discovery and grouping (docs/contracts.md section 3)
  DUPLICATE_ENDPOINT: (name: string, first: SourceLocation, second: SourceLocation) =>
    new SvcError("DUPLICATE_ENDPOINT", `Endpoint "${name}" is defined twice: ${first.file}:${first.line} and ${second.file}:${second.line}.`, {
      loc: second,
      remedy: "Give each queue-based function its own endpoint name, or define a load-balanced endpoint once and add routes to it.",
    }),
  DUPLICATE_FUNCTION: (name: string, first: string, second: string, loc: SourceLocation) =>
    new SvcError("DUPLICATE_FUNCTION", `Function name "${name}" is used by two endpoints: "${first}" and "${second}".`, {
      loc,
      remedy: "Rename one of the functions: cross-endpoint calls find functions by name.",
    }),
  DUPLICATE_ROUTE: (endpoint: string, route: string, loc: SourceLocation) =>
    new SvcError("DUPLICATE_ROUTE", `Route ${route} is declared twice on load-balanced endpoint "${endpoint}".`, {
      loc,
      remedy: "Each METHOD + path may appear once per endpoint.",
    }),
  ENDPOINT_ARGUMENT_INVALID: (loc: SourceLocation, message: string) =>
    new SvcError("ENDPOINT_ARGUMENT_INVALID", `Invalid Endpoint(...) argument: ${message}`, {
      loc,
      remedy: `See the Endpoint signature in ${DOCS.endpointSignature}.`,
    }),
  MIXED_ENDPOINT_KINDS: (name: string, loc: SourceLocation) =>
    new SvcError("MIXED_ENDPOINT_KINDS", `Endpoint "${name}" mixes a queue-based function with load-balanced routes.`, {
      loc,
      remedy: "Use @Endpoint(...) on one function for a queue endpoint, or api = Endpoint(...) with @api.get/post routes.",
    }),
  NON_STATIC_ARGUMENT: (loc: SourceLocation, argument: string, source: string) =>
    new SvcError("NON_STATIC_ARGUMENT", `Argument "${argument}" of Endpoint(...) is not a static value: ${source}`, {
      loc,
      remedy: "Use literals, module-level constants or GpuGroup members in Endpoint(...): svc reads them without running your code.",
    }),
  NO_ENDPOINTS: () =>
    new SvcError("NO_ENDPOINTS", "No functions decorated with @Endpoint(...) were found.", {
      remedy:
        "Decorate functions with @Endpoint(name=...) from `svc` using correct syntax, and make sure their Python files are not excluded by .gitignore or .svcignore. A stock hosted-SDK worker needs a handler.py (or src/handler.py, rp_handler.py, or the file svc.config.ts names in stockWorker.file) that calls runpod.serverless.start({...}) when run.",
    }),
  STOCK_WORKER_NOT_FOUND: (file: string, why: string) =>
    new SvcError("STOCK_WORKER_NOT_FOUND", `stockWorker.file "${file}" in svc.config.ts is not a stock worker: ${why}.`, {
      remedy:
        'Name the Python file that calls runpod.serverless.start({"handler": ...}) at module level (or under `if __name__ == "__main__":`), relative to the project folder.',
    }),
  PYTHON_NOT_FOUND: (python: string) =>
    new SvcError("PYTHON_NOT_FOUND", `Python interpreter "${python}" was not found.`, {
      remedy: "Install Python 3.9+ or point SVC_PYTHON at an interpreter.",
    }),
  PYTHON_SYNTAX: (loc: SourceLocation, message: string) =>
    new SvcError("PYTHON_SYNTAX", `Python syntax error: ${message}`, { loc, remedy: "Fix the syntax error; svc parses every app file." }),
  RESERVED_ROUTE: (endpoint: string, path: string, loc: SourceLocation) =>
    new SvcError("RESERVED_ROUTE", `Route path ${path} on endpoint "${endpoint}" is reserved by the platform.`, {
      loc,
      remedy: "Choose another path: /ping and /execute are used by the worker runtime.",
    }),

  // dependencies, packing and the build's checks
  ARTIFACT_SOURCE_CHANGED: (file: string, read: number, expected: number) =>
    new SvcError("ARTIFACT_SOURCE_CHANGED", `${file} changed while it was being packed (${read} bytes read, ${expected} expected).`, {
      remedy: "Build again once nothing writes to the app folder (or leave that file out with .svcignore).",
    }),
  /** `which` size broke the limit: the .tar.gz file (artifact size) or the tree it unpacks to (deployment size); spec 8. */
  ARTIFACT_TOO_LARGE: (
    which: "compressed" | "unpacked",
    sizes: { compressed: number; unpacked: number },
    limit: number,
    biggest: string,
    big: { packages: string[]; appFiles: string[] },
  ) =>
    new SvcError(
      "ARTIFACT_TOO_LARGE",
      `${
        which === "compressed"
          ? `The artifact .svc/artifact.tar.gz is ${overBytes(sizes.compressed, limit)} compressed, over the ${formatBytes(limit)} artifact-size limit (it unpacks to ${formatBytes(sizes.unpacked)}).`
          : `The artifact unpacks to ${overBytes(sizes.unpacked, limit)}, over the ${formatBytes(limit)} deployment-size limit (the .tar.gz itself is ${formatBytes(sizes.compressed)}).`
      }\nBiggest entries, unpacked:\n${biggest}`,
      { remedy: sizeRemedy(big) },
    ),
  EXCLUDE_UNMATCHED: (name: string, from: string, closest: string | undefined, requirements: string[]) =>
    new SvcError("EXCLUDE_UNMATCHED", `${from} names "${name}", which is no requirement of this build${closest ? `; did you mean "${closest}"?` : "."}`, {
      remedy: closest
        ? `Exclude ${closest} instead (--exclude ${closest}).`
        : `Exclude one of the requirements (${requirements.slice(0, 10).join(", ") || "there are none"}), or drop "${name}" from ${from}.`,
    }),
  IMAGE_PIN_IGNORED: (spec: string, source: string, name: string, version: string | null, python: string) =>
    new SvcError(
      "IMAGE_PIN_IGNORED",
      `${source} pins ${spec}, but ${name} is pre-installed in the GPU image and left out of the artifact: workers import the image's ${name} ${version ?? "(not installed there)"} (${python}), not ${spec}.`,
      {
        remedy: `Loosen the pin to what the image has (${version ? `${name}==${version}, or drop the version` : `drop ${name} from the requirements`}), or run the GPU image on an interpreter with the version you need (SVC_PYTHON_GPU=<python> for svc's embedded platform).`,
      },
    ),
  /** `fix`: what else would make it importable, true for the case ("add numpy to requirements.txt", "remove numpy from --exclude"). */
  IMPORT_NOT_IN_IMAGE: (loc: SourceLocation, pkg: string, fix: string, endpoints: string[], why: string) =>
    new SvcError(
      "IMPORT_NOT_IN_IMAGE",
      `Module-level import of "${pkg}", which endpoint${endpoints.length > 1 ? "s" : ""} ${endpoints.map((e) => `"${e}"`).join(", ")} will not find when deployed: ${why}.`,
      { loc, remedy: `Import packages inside the endpoint function body, not at file top, or ${fix}.` },
    ),
  PIP_FAILED: (output: string) =>
    new SvcError("PIP_FAILED", `pip could not install the requirements:\n${output}`, {
      remedy:
        "Check the package names and versions. Dependencies are installed for Linux x86_64 as binary wheels only; pick a version that has a manylinux wheel, or exclude the package with --exclude.",
    }),
  STRICT_CHECKS_FAILED: (problems: ReadonlyArray<Error & { code: string }>) =>
    new SvcError(
      "STRICT_CHECKS_FAILED",
      `${problems.length} build checks failed under --strict:\n${problems.map((p, i) => `  ${i + 1}. [${p.code}] ${p.message.replace(/\n/g, "\n     ")}`).join("\n")}`,
      {
        remedy: "Fix each (its remedy is under it), or build without --strict (config strict: false) to get them as warnings.",
      },
    ),

  // the project's build and manifest (docs/manifest.md)
  BUILD_MISSING: (root: string) => new SvcError("BUILD_MISSING", `No build found in ${root}/.svc.`, { remedy: "Run `svc build` first." }),
  INIT_WOULD_OVERWRITE: (files: string[]) =>
    new SvcError("INIT_WOULD_OVERWRITE", `svc init would overwrite: ${files.join(", ")}.`, {
      remedy: "Use --force to overwrite, or init into an empty folder.",
    }),
  MANIFEST_INVALID: (issues: string, file?: string) =>
    new SvcError("MANIFEST_INVALID", `Invalid manifest${file ? ` ${file}` : ""}: ${issues}`, { remedy: "Rebuild with `svc build`." }),
  NOT_DEPLOYED: (dir: string) =>
    new SvcError("NOT_DEPLOYED", `${dir} holds no deploy: the app has not been deployed from this folder.`, {
      remedy:
        "Run `svc deploy` first; it records each environment's endpoint URLs in .svc/deployments/<env>.json (kept across builds), or pass --env <name> to ask the platform.",
    }),

  // platform client (docs/deploy.md)
  /** `hint`: where the key came from and what else would work (the embedded platform's own key). */
  AUTH_FAILED: (url: string, hint?: string) =>
    new SvcError("AUTH_FAILED", `The platform at ${url} refused the API key${hint ? ` ${hint}` : ""}.`, { remedy: AUTH_REMEDY, status: 401 }),
  AUTH_MISSING: () => new SvcError("AUTH_MISSING", "PLATFORM_API_KEY is not set.", { remedy: AUTH_REMEDY, status: 401 }),
  ENVIRONMENT_AMBIGUOUS: (app: string, names: string[]) =>
    new SvcError("ENVIRONMENT_AMBIGUOUS", `App "${app}" has several environments (${names.join(", ")}) and no --env was given.`, {
      remedy: "Choose one with --env <name>.",
    }),
  ENVIRONMENT_NAME_INVALID: (name: string, max: number) =>
    new SvcError(
      "ENVIRONMENT_NAME_INVALID",
      `--env ${JSON.stringify(name)} is not an environment name the platform accepts: letters, digits, '.', '-' and '_', starting with a letter or digit, at most ${max} characters.`,
      {
        remedy: `Pick a name such as ${JSON.stringify(
          name
            .replace(/[^A-Za-z0-9._-]+/g, "-")
            .replace(/^[^A-Za-z0-9]+|-+$/g, "")
            .slice(0, max) || "staging",
        )}; \`svc env list\` shows the app's environments.`,
      },
    ),
  JOB_WAIT_FAILED: (endpoint: string, jobId: string, cause: unknown) =>
    new SvcError("JOB_WAIT_FAILED", `Lost contact while waiting on job ${jobId} of endpoint ${endpoint}: ${String((cause as Error)?.message ?? cause)}`, {
      remedy: `The job may still be running: ask for its status (GET <endpoint url>/status/${jobId}) once the platform answers again.`,
      status: 502,
      cause,
    }),
  NOT_FOUND: (what: string, name: string, remedy?: string) => new SvcError("NOT_FOUND", `${what} "${name}" was not found.`, { status: 404, remedy }),
  PLATFORM_ERROR: (operation: string, message: string) =>
    new SvcError("PLATFORM_ERROR", `The platform answered an error to ${operation}: ${message}`, { status: 502 }),
  PLATFORM_NOT_CONFIGURED: () =>
    new SvcError("PLATFORM_NOT_CONFIGURED", "PLATFORM_API_URL is not set and no embedded platform was given to start.", {
      remedy:
        "Set PLATFORM_API_URL and PLATFORM_API_KEY (in .env or exported), or run the svc CLI, which starts the embedded platform when PLATFORM_API_URL is empty.",
    }),
  PLATFORM_UNREACHABLE: (url: string, cause: unknown) =>
    new SvcError("PLATFORM_UNREACHABLE", `Cannot reach the platform at ${url}: ${String((cause as Error)?.message ?? cause)}`, {
      remedy: "Start the embedded platform with `svc platform start`, or check PLATFORM_API_URL.",
      status: 502,
      cause,
    }),
  PLATFORM_URL_INVALID: (url: string) =>
    new SvcError("PLATFORM_URL_INVALID", `PLATFORM_API_URL "${url}" is not an address svc can call: it needs http:// or https:// and a host.`, {
      remedy: `Set PLATFORM_API_URL to the platform's full address (for example ${/^[\w.-]+(:\d+)?(\/\S*)?$/.test(url) ? `http://${url}` : "http://127.0.0.1:8787"}), in .env or exported; leave it empty to use the embedded platform.`,
    }),

  // platform server: HTTP answers (docs/platform.md, "Limits")
  BAD_REQUEST: (message: string) => new SvcError("BAD_REQUEST", message, { status: 400 }),
  BODY_NOT_UTF8: () =>
    new SvcError("BODY_NOT_UTF8", "The request body is not valid UTF-8; JSON must be (RFC 8259), and the platform changes nothing it was sent.", {
      status: 400,
      remedy: "Encode the JSON as UTF-8; send bytes that are not text as base64 in a string.",
    }),
  CONNECTION_LIMIT: (limit: number, who: "worker" | "client" | "unverified") =>
    new SvcError(
      "CONNECTION_LIMIT",
      who === "unverified"
        ? `Too many connections without a valid key: the platform keeps at most ${limit} open for all such clients together, and closed this one.`
        : `Too many connections from this ${who}: the platform keeps at most ${limit} open per ${who === "worker" ? "worker" : "key"}, and closed this one.`,
      {
        status: 429,
        remedy:
          who === "unverified"
            ? "Send a valid key (`Authorization: Bearer <key>`) on a connection's first request: connections are counted per verified key."
            : "Reuse connections (one HTTP client with keep-alive, a pool of a few dozen) instead of opening one per request, and close the ones you no longer use.",
      },
    ),
  GRAPHQL_TOO_COSTLY: (what: string, value: string, limit: string) =>
    new SvcError("GRAPHQL_TOO_COSTLY", `The GraphQL request is over the platform's ${what} limit (${value}; the limit is ${limit}); nothing of it ran.`, {
      status: 400,
      remedy: `Ask for less in one request: split it into several (fewer fields, aliases or levels each), or page through lists (${DOCS.limits}).`,
    }),
  JOB_OUTPUT_INVALID: (why: string) =>
    new SvcError("JOB_OUTPUT_INVALID", `The job's result could not be stored: ${why}.`, {
      remedy: `Return JSON values only: no NaN or Infinity (use null or a string), nesting within the platform's limit (${DOCS.limits}).`,
    }),
  JSON_MALFORMED: (where: string, detail: string) =>
    new SvcError("JSON_MALFORMED", `${where} is not valid JSON (${detail}).`, {
      status: 400,
      remedy: "Send standard JSON: NaN, Infinity, comments and trailing commas are not JSON.",
    }),
  JSON_TOO_DEEP: (where: string, limit: number) =>
    new SvcError("JSON_TOO_DEEP", `${where} is nested deeper than ${limit} levels, the platform's JSON nesting limit.`, {
      status: 400,
      remedy: `Send flatter JSON (${DOCS.limits}).`,
    }),
  PAYLOAD_TOO_LARGE: (limit: number) => new SvcError("PAYLOAD_TOO_LARGE", `Request body is over the ${formatBytes(limit)} limit.`, { status: 413 }),
  RATE_LIMITED: (route: string, limit: string, retryAfterS = 1) =>
    new SvcError("RATE_LIMITED", `Too many requests to ${route}: over the limit of ${limit} per endpoint (the hosted platform's).`, {
      status: 429,
      retryAfterS,
      remedy:
        "Slow down and retry after the answer's Retry-After seconds (svc's clients do). On the embedded platform (local load tests) lift the limits with `svc platform start --no-rate-limits` or SVC_PLATFORM_RATE_LIMITS=off.",
    }),
  UNAUTHORIZED: () => new SvcError("UNAUTHORIZED", "Missing or invalid API key.", { remedy: AUTH_REMEDY, status: 401 }),

  // platform server: artifacts it unpacks (docs/contracts.md)
  ARTIFACT_LIMIT: (entry: string, why: string) =>
    new SvcError("ARTIFACT_LIMIT", `Refusing to unpack the artifact at entry "${entry}": ${why}.`, {
      remedy: "Rebuild with `svc build`, which refuses artifacts over 1.5 GB unpacked; leave big folders or packages out (.svcignore, --exclude).",
    }),
  ARTIFACT_UNSAFE: (entry: string, why: string) =>
    new SvcError("ARTIFACT_UNSAFE", `Refusing to unpack artifact entry "${entry}": ${why}.`, {
      remedy: "Rebuild the artifact with `svc build`; artifacts may not contain absolute paths, '..' or links leaving the folder.",
    }),

  // platform server: workers and their containment (docs/platform.md)
  GPUS_UNAVAILABLE: (endpoint: string, asked: number, machine: number) =>
    new SvcError("GPUS_UNAVAILABLE", `Endpoint "${endpoint}" asks for ${asked} GPUs per worker; this machine has ${machine}.`, {
      remedy: `Deploy it with gpu_count=${machine} or fewer (\`svc platform status\` lists the GPUs), or run it on a platform with bigger machines.`,
      status: 503,
    }),
  IMAGE_NOT_RUNNABLE: (endpoint: string, image: string) =>
    new SvcError(
      "IMAGE_NOT_RUNNABLE",
      `Endpoint "${endpoint}" runs the container image "${image}" and no svc build: the embedded platform cannot run container images; it runs svc builds (an app deployed with \`svc deploy\`) in its CPU and GPU image environments (svc/worker-cpu:py3.11, svc/worker-gpu:py3.11-torch).`,
      {
        status: 503,
        remedy:
          "Deploy the app with `svc deploy` (or `svc run`) and send jobs to its endpoints, or run this image on the hosted platform (set PLATFORM_API_URL).",
      },
    ),
  KEY_SCOPE: (scope: string, request: string) =>
    new SvcError(
      "KEY_SCOPE",
      `This is a worker's key, scoped to ${scope}: it reaches only the queue routes (run, runsync, status, stream, cancel, health) of that scope's endpoints and getBuild of its app's builds, not ${request}.`,
      {
        status: 403,
        remedy: "Use the platform's API key (PLATFORM_API_KEY outside workers) for anything else; a worker calls only its own app's endpoints.",
      },
    ),
  KEY_FORBIDDEN: (key: string, request: string, needs: string) =>
    new SvcError("KEY_FORBIDDEN", `Key ${key} may not ${request}: that needs ${needs}.`, {
      status: 403,
      remedy: "Use a key whose role and scope cover it (`svc key list` shows the keys; an admin creates one with `svc key create`).",
    }),
  NO_WORKER_READY: (endpoint: string, why?: string) =>
    new SvcError("NO_WORKER_READY", `No worker of endpoint "${endpoint}" became ready in time${why ? `: ${why}` : "."}`, {
      status: 503,
      remedy: "Retry shortly; see the endpoint's worker logs if it keeps failing.",
    }),
  SANDBOX_REQUIRED: (why: string) =>
    new SvcError("SANDBOX_REQUIRED", `Refusing to start a worker without the sandbox (isolation is strict; bubblewrap's \`bwrap\` is ${why}).`, {
      status: 503,
      remedy: "Install the Debian package `bubblewrap` (and allow user namespaces), or start the platform without --isolation strict / SVC_ISOLATION=strict.",
    }),
  WORKER_LIMITS_UNAVAILABLE: (why: string) =>
    new SvcError("WORKER_LIMITS_UNAVAILABLE", `Refusing to start a worker without its resource limits (isolation is strict): ${why}.`, {
      status: 503,
      remedy:
        "Run the platform as root on a machine whose cgroups (v1 memory, pids and cpu, or v2 with those controllers delegated) it may write, or start it without --isolation strict / SVC_ISOLATION=strict.",
    }),
  WORKER_OUT_OF_MEMORY: (limit: string, flavour: string) =>
    new SvcError(
      "WORKER_OUT_OF_MEMORY",
      `The worker ran out of memory: it is limited to ${limit} (its flavour ${flavour}; its /tmp counts in it), and the kernel ended it. The job failed and the worker was replaced.`,
      {
        status: 500,
        remedy: `Use less memory at once (smaller batches, stream files instead of reading them whole, keep less in /tmp), or give the endpoint a larger flavour (cpu="cpu3g-2-8", a larger cpu3c-*, or a GPU type); ${DOCS.resources} lists each flavour's memory.`,
      },
    ),
  WEBHOOK_ALLOW_INVALID: (entry: string) =>
    new SvcError("WEBHOOK_ALLOW_INVALID", `SVC_WEBHOOK_ALLOW has an entry that is not a host name, an address or a CIDR: "${entry}".`, {
      remedy: `List host names, addresses and CIDRs, separated by commas: SVC_WEBHOOK_ALLOW=localhost,127.0.0.1,10.0.0.0/8 (${DOCS.webhooks}).`,
    }),
  WEBHOOK_REFUSED: (host: string, why: string) =>
    new SvcError("WEBHOOK_REFUSED", `The platform does not send webhooks to ${host}: ${why}, and a worker could reach the host's own services through it.`, {
      status: 400,
      remedy: `Send webhooks to a public address. An operator who runs a receiver on this host allows it with SVC_WEBHOOK_ALLOW (host names, addresses, CIDRs; ${DOCS.webhooks}) when starting the platform.`,
    }),
  WORKER_TOKEN_INVALID: (workerId: string) =>
    new SvcError(
      "WORKER_TOKEN_INVALID",
      `Missing or invalid worker token for worker "${workerId}": the worker routes take the token the platform gave that worker (SVC_WORKER_TOKEN), not an API key.`,
      {
        status: 401,
        remedy:
          "A worker whose token is refused is no longer registered (stopped, or its platform restarted): let the platform start a new one. PLATFORM_API_KEY does not open these routes.",
      },
    ),

  WORKER_UIDS_INVALID: (text: string) =>
    new SvcError("WORKER_UIDS_INVALID", `SVC_WORKER_UIDS "${text}" is not a range of host uids for workers.`, {
      remedy: `Give it as first-last, e.g. 200000-200999: uids no one else on the host uses, from 1000 up (${DOCS.threatModel}).`,
    }),
  WORKER_UIDS_EXHAUSTED: (range: string, dir: string) =>
    new SvcError("WORKER_UIDS_EXHAUSTED", `Every uid of the workers' pool ${range} is claimed by an app of a platform on this host (claims in ${dir}).`, {
      status: 503,
      remedy: `Give the platform a larger range (SVC_WORKER_UIDS=first-last), or remove the claims in ${dir} of platforms no longer in use.`,
    }),

  // platform server: workers on a Ray cluster (docs/platform.md, "Workers on a Ray cluster")
  RAY_UNREACHABLE: (address: string, why: string) =>
    new SvcError("RAY_UNREACHABLE", `The Ray cluster's Jobs API at ${address} does not answer as Ray's dashboard: ${why}.`, {
      status: 503,
      remedy:
        "Give --ray-address (SVC_RAY_ADDRESS) the head node's dashboard URL, http://<head>:8265, and start the head with `ray start --head` and the dashboard (`pip install 'ray[default]'`).",
    }),
  WORKER_TICKET_INVALID: (workerId: string) =>
    new SvcError(
      "WORKER_TICKET_INVALID",
      `Missing or invalid launch ticket for worker "${workerId}": its launch description is handed out for the one-time ticket its Ray job carries (SVC_LAUNCH_TICKET), to no other credential.`,
      {
        status: 401,
        remedy: "Only the launcher the platform's Ray backend submitted (`svc worker launch`) redeems a ticket; a stopped worker's ticket opens nothing.",
      },
    ),
  WORKER_LAUNCH_TAKEN: (workerId: string) =>
    new SvcError("WORKER_LAUNCH_TAKEN", `Worker "${workerId}"'s launch description was already handed out: a worker is launched once.`, {
      status: 409,
      remedy:
        "A launcher that runs again (a retried Ray job, a copied command) gets nothing, and the worker is stopped (whoever redeemed the ticket first holds its token): the platform starts a new one.",
    }),

  // secrets (docs/platform.md, "Secrets")
  SECRET_EXISTS: (name: string) =>
    new SvcError("SECRET_EXISTS", `A secret named "${name}" exists already.`, {
      status: 400,
      remedy: `Delete it first (\`svc secret delete ${name}\`), or pick another name.`,
    }),
  SECRET_INVALID: (why: string) =>
    new SvcError("SECRET_INVALID", `Cannot store the secret: ${why}.`, {
      status: 400,
      remedy: "A name is letters, digits, _ and - (at most 64); a value is 1 byte to 64 KiB, from stdin or --from-env VAR.",
    }),
  SECRET_MISSING: (names: string[], endpoint?: string) =>
    new SvcError(
      "SECRET_MISSING",
      `${endpoint ? `Endpoint "${endpoint}"` : "The endpoint's env"} references ${names.length === 1 ? "a secret" : "secrets"} the platform does not have: ${names.join(", ")}.`,
      {
        status: 400,
        remedy: `Create ${names.length === 1 ? "it" : "each"} with \`svc secret create ${names[0]}\` (the value from stdin or --from-env VAR), or remove the {{ PLATFORM_SECRET_${names[0]} }} reference; \`svc secret list\` shows the names there are.`,
      },
    ),
  SECRET_NOT_FOUND: (name: string) =>
    new SvcError("SECRET_NOT_FOUND", `No secret named "${name}".`, { status: 404, remedy: "`svc secret list` shows the names there are." }),

  // network volumes (docs/volumes.md)
  VOLUME_EXISTS: (name: string) =>
    new SvcError("VOLUME_EXISTS", `Network volume "${name}" already exists.`, {
      remedy: "Pick another name, or use the one there (`svc volume get " + name + "`).",
      status: 409,
    }),
  VOLUME_IN_USE: (name: string, endpoints: string[]) =>
    new SvcError("VOLUME_IN_USE", `Network volume "${name}" is attached to endpoint(s) ${endpoints.join(", ")}.`, {
      remedy: "Undeploy those endpoints (or deploy them without volume=...) first, or pass --force to detach it from them and delete it with its data.",
      status: 409,
    }),
  VOLUME_NOT_FOUND: (name: string, endpoint?: string) =>
    new SvcError(
      "VOLUME_NOT_FOUND",
      `Network volume "${name}" does not exist on this platform${endpoint ? ` (endpoint "${endpoint}" declares volume="${name}")` : ""}.`,
      {
        remedy: `Create it first: svc volume create ${name} --size <GB> (\`svc volume list\` shows the volumes).`,
        status: 404,
      },
    ),
  VOLUME_PATH_INVALID: (path: string, why: string) =>
    new SvcError("VOLUME_PATH_INVALID", `"${path}" is not a path in a volume: ${why}.`, {
      remedy: "Write it as <volume>[:<folder/file>], e.g. wan-weights:models/Wan2.2 (no '..' segments).",
    }),
  VOLUME_TRANSFER_FAILED: (what: string, why: string) =>
    new SvcError("VOLUME_TRANSFER_FAILED", `${what} failed: ${why}`, {
      remedy: "Run the same command again: uploads resume where they stopped (only the missing parts are sent).",
    }),

  // dev server routes (docs/dev-server.md)
  AMBIGUOUS: (message: string) => new SvcError("AMBIGUOUS", message, { status: 400 }),
  METHOD_NOT_ALLOWED: (message: string) => new SvcError("METHOD_NOT_ALLOWED", message, { status: 405 }),
  UNKNOWN_MODULE: (alias: string, known: string[]) =>
    new SvcError("UNKNOWN_MODULE", `No worker module "${alias}". Known: ${known.join(", ") || "none"}.`, { status: 404 }),

  // command line
  CLI_USAGE: (message: string, command?: string) =>
    new SvcError("CLI_USAGE", message, { remedy: `Run \`svc ${command ? `${command} ` : ""}--help\` for the accepted options.` }),
  CONFIRMATION_DECLINED: (action: string, remedy: string) => new SvcError("CONFIRMATION_DECLINED", `You answered no: not going to ${action}.`, { remedy }),
  CONFIRMATION_REQUIRED: (action: string) =>
    new SvcError("CONFIRMATION_REQUIRED", `Refusing to ${action} without confirmation.`, {
      remedy: "Pass --yes to confirm (stdin is not a terminal, so svc cannot ask).",
    }),
  LOGS_UNAVAILABLE: (platform: string) =>
    new SvcError("LOGS_UNAVAILABLE", `The platform at ${platform} does not serve worker logs (its GraphQL API has no workerLogLines).`, {
      remedy: "Read the logs in that platform's own console, or run the app on svc's embedded platform (unset PLATFORM_API_URL).",
    }),
  PLATFORM_ALREADY_RUNNING: (dir: string, url: string, pid: number) =>
    new SvcError("PLATFORM_ALREADY_RUNNING", `A platform already runs for ${dir} at ${url} (pid ${pid}).`, {
      remedy: "Use that one, stop it with `svc platform stop`, or start another with --dir <folder> --port <port>.",
    }),
  PORT_IN_USE: (port: number, triedNext = true) =>
    new SvcError("PORT_IN_USE", triedNext ? `Port ${port} is in use and no free port was found after it.` : `Port ${port} is in use.`, {
      remedy: triedNext
        ? "Pass --port with a free port."
        : "Pass --port with a free port (--port 0 takes any), or stop what listens on it (`svc platform status` names a running platform).",
    }),
  SHELL_UNAVAILABLE: (platform: string, answer: string) =>
    new SvcError("SHELL_UNAVAILABLE", `The platform at ${platform} does not offer shells in an endpoint's environment (it answered ${answer}).`, {
      remedy:
        "svc shell runs on svc's embedded platform: unset PLATFORM_API_URL (or point it at a platform started with `svc platform start`) and deploy there; on a hosted platform use its own console.",
    }),
  UNKNOWN_COMMAND: (name: string, closest?: string) =>
    new SvcError("UNKNOWN_COMMAND", `Unknown command "${name}".${closest ? ` Did you mean \`svc ${closest}\`?` : ""}`, {
      remedy: "Run `svc --help` for the list of commands.",
    }),
};

/** What to do about what is big: packages → --exclude (spec 7); the app's own files → .svcignore or a network volume. */
function sizeRemedy({ packages, appFiles }: { packages: string[]; appFiles: string[] }): string {
  const steps = [];
  if (packages.length)
    steps.push(`leave out big packages with --exclude ${packages.join(",")} (those pre-installed in every endpoint's image are excluded already)`);
  if (appFiles.length)
    steps.push(
      `keep ${appFiles.join(", ")} out of the artifact with .svcignore and read such data from a network volume (mounted at /platform-volume) instead`,
    );
  if (!steps.length) steps.push("use --exclude <packages> to leave out more packages (those pre-installed in every endpoint's image are excluded already)");
  const text = steps.join("; ");
  return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
}

/** A size over `limit`, in bytes as well when rounding would show both as the same figure. */
function overBytes(size: number, limit: number): string {
  return formatBytes(size) === formatBytes(limit) ? `${formatBytes(size)} (${size} bytes, limit ${limit})` : formatBytes(size);
}
