/**
 * svc-plugin-secrets — refuses to pack an artifact whose files hold a secret: a value of the
 * project's .env, a private key, or a cloud or API token, and names each file and line. It taps
 * `pack` before svc:tar-pack, so a refused artifact is never written. See README.md.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { HOOK_ORDER, definePlugin, pluginError, z } from "@svc-dev/svc";

export const PLUGIN_NAME = "svc-plugin-secrets";
/** The code of the error this plugin throws (svc reports it as PLUGIN_REFUSED with this pluginCode and its remedy). */
export const SECRET_FOUND = "SECRET_FOUND";
/** .env values shorter than this are too common to be told from ordinary text. */
const MIN_ENV_VALUE = 8;
/** Bigger files are not scanned (model weights, archives). */
const MAX_SCANNED_BYTES = 2 << 20;

/** What a secret looks like: [description, pattern]. */
const PATTERNS = [
  ["a private key", /-----BEGIN (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----/],
  ["an AWS access key id", /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/],
  ["a Google service-account key", /"private_key_id"\s*:\s*"[0-9a-f]{40}"/],
  ["a GitHub token", /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b/],
  ["a Slack token", /\bxox[abprs]-[A-Za-z0-9-]{10,}/],
  ["a Stripe secret key", /\b[rs]k_live_[A-Za-z0-9]{20,}\b/],
];

/** `KEY=value` lines of a .env file, as [key, value] with quotes removed. */
function envValues(text) {
  const values = [];
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    const value = match?.[2].replace(/^(['"])(.*)\1$/, "$2");
    if (match && value && value.length >= MIN_ENV_VALUE) values.push([match[1], value]);
  }
  return values;
}

/** Every secret in one file's text, as { line, what }. */
export function findSecrets(text, env = []) {
  const found = [];
  text.split(/\r?\n/).forEach((line, index) => {
    for (const [what, pattern] of PATTERNS) if (pattern.test(line)) found.push({ line: index + 1, what });
    for (const [key, value] of env) if (line.includes(value)) found.push({ line: index + 1, what: `the value of ${key} from .env` });
  });
  return found;
}

/**
 * The options, checked by svc when the plugin is made (an unknown key names the closest one):
 * `allow` — app files (POSIX paths relative to the project) never scanned, for test fixtures
 * holding fake keys; `envFile` — the file whose values must not ship (`.env`).
 */
export const optionsSchema = z.strictObject({
  allow: z.array(z.string()).default([]),
  envFile: z.string().min(1).default(".env"),
});

/** The plugin. */
export default definePlugin(
  (options) => {
    const allow = new Set(options.allow);
    const envFile = options.envFile;
    return {
      name: PLUGIN_NAME,
      apply(pipeline) {
        pipeline.hooks.pack.tapPromise({ name: PLUGIN_NAME, stage: HOOK_ORDER.BEFORE_BUILTINS }, async (artifact, ctx) => {
          const env = envValues(await readFile(join(ctx.root, envFile), "utf8").catch(() => ""));
          const findings = [];
          for (const file of ctx.sourceFiles) {
            if (allow.has(file)) continue;
            const data = await readFile(join(ctx.root, file));
            if (data.length > MAX_SCANNED_BYTES || data.includes(0)) continue;
            for (const { line, what } of findSecrets(data.toString("utf8"), env)) findings.push(`${file}:${line}: ${what}`);
          }
          if (findings.length) {
            // A verdict, not a crash: svc shows it as PLUGIN_REFUSED with this code and remedy.
            throw pluginError(SECRET_FOUND, `the artifact would hold ${findings.length} secret(s):\n    ${findings.join("\n    ")}`, {
              remedy: `Read them from environment variables at run time instead, or list files with fake ones in ${PLUGIN_NAME}'s "allow" option.`,
            });
          }
          ctx.meta.set(PLUGIN_NAME, { scanned: ctx.sourceFiles.length - allow.size });
          return artifact;
        });
      },
    };
  },
  { name: PLUGIN_NAME, options: optionsSchema },
);
