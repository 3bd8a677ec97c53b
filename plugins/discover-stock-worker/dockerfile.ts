/**
 * What svc can honour of a stock worker's Dockerfile, and what it cannot. svc builds no image: a
 * worker runs in the image environment of its flavour (docs/platform.md), so of a Dockerfile it takes
 * the base image's kind (a CUDA or PyTorch base means a GPU worker), the packages of `pip install`
 * lines (as the endpoint's dependencies) and `ENV` (as its env); every other instruction is named
 * back so the build can say it is not honoured, never dropped without a word.
 */

export interface DockerfileFacts {
  /** The last `FROM`'s image, if any. */
  baseImage?: string;
  /** The base image ships CUDA or PyTorch: its workers want a GPU. */
  gpuBase: boolean;
  /** Requirement strings of `pip install` commands (not `-r` files: requirements.txt is read anyway). */
  packages: string[];
  env: Record<string, string>;
  /** `line: instruction` of what svc does not do. */
  ignored: string[];
}

/** Instructions whose effect svc has by other means: the folder is packed as it is, the file runs as the worker. */
const COVERED = new Set(["COPY", "ADD", "WORKDIR", "CMD", "ENTRYPOINT", "LABEL", "ARG"]);
const GPU_BASE = /cuda|pytorch|torch|nvidia|tensorflow/i;

/** Joins continued lines (a trailing `\`) and drops comments: [line number, text] per instruction. */
function instructions(text: string): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  let current = "";
  let start = 0;
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (current === "" && (line === "" || line.startsWith("#"))) return;
    if (current === "") start = index + 1;
    if (line.startsWith("#")) return; // a comment inside a continued instruction
    if (line.endsWith("\\")) {
      current += `${line.slice(0, -1)} `;
      return;
    }
    out.push([start, current + line]);
    current = "";
  });
  if (current.trim()) out.push([start, current.trim()]);
  return out;
}

/** Splits a shell word list, honouring single and double quotes (no expansions). */
function words(command: string): string[] {
  const out: string[] = [];
  let word = "";
  let quote: string | undefined;
  let any = false;
  for (const ch of command) {
    if (quote) {
      if (ch === quote) quote = undefined;
      else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      any = true;
    } else if (/\s/.test(ch)) {
      if (word || any) out.push(word);
      word = "";
      any = false;
    } else word += ch;
  }
  if (word || any) out.push(word);
  return out;
}

/** The packages of one shell command if it is a `pip install` (`pip`, `pip3`, `python -m pip`, `uv pip`); undefined otherwise. */
function pipPackages(command: string): string[] | undefined {
  const w = words(command);
  let i = 0;
  if (/^python[0-9.]*$/.test(w[0] ?? "") && w[1] === "-m" && w[2] === "pip") i = 3;
  else if (/^pip[0-9.]*$/.test(w[0] ?? "")) i = 1;
  else if (w[0] === "uv" && w[1] === "pip") i = 2;
  else return undefined;
  if (w[i] !== "install") return undefined;
  const packages: string[] = [];
  for (let j = i + 1; j < w.length; j++) {
    const arg = w[j]!;
    if (
      arg === "-r" ||
      arg === "--requirement" ||
      arg === "-c" ||
      arg === "--constraint" ||
      arg === "-i" ||
      arg === "--index-url" ||
      arg === "--extra-index-url"
    )
      j++;
    else if (!arg.startsWith("-")) packages.push(arg);
  }
  return packages;
}

/** `ENV A=1 B="two"` or the legacy `ENV A 1`. */
function envPairs(rest: string): Record<string, string> {
  const w = words(rest);
  if (w.length >= 2 && !w[0]!.includes("=")) return { [w[0]!]: w.slice(1).join(" ") };
  const env: Record<string, string> = {};
  for (const pair of w) {
    const at = pair.indexOf("=");
    if (at > 0) env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return env;
}

export function readDockerfile(text: string): DockerfileFacts {
  const facts: DockerfileFacts = { gpuBase: false, packages: [], env: {}, ignored: [] };
  for (const [line, instruction] of instructions(text)) {
    const [keyword = "", ...restWords] = instruction.split(/\s+/);
    const kw = keyword.toUpperCase();
    const rest = instruction.slice(keyword.length).trim();
    if (kw === "FROM") {
      facts.baseImage = restWords.find((word) => !word.startsWith("--"));
      facts.gpuBase = GPU_BASE.test(facts.baseImage ?? "");
    } else if (kw === "ENV") Object.assign(facts.env, envPairs(rest));
    else if (kw === "RUN") {
      // Each `&&`/`;` part: pip installs are taken, anything else (apt-get, curl, ...) is named back.
      const others: string[] = [];
      for (const part of rest
        .split(/&&|;/)
        .map((p) => p.trim())
        .filter(Boolean)) {
        const packages = pipPackages(part);
        if (packages) facts.packages.push(...packages);
        else others.push(part);
      }
      if (others.length) facts.ignored.push(`${line}: RUN ${others.join(" && ")}`);
    } else if (!COVERED.has(kw)) facts.ignored.push(`${line}: ${instruction}`);
  }
  return facts;
}
