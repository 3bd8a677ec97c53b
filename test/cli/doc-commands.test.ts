/**
 * The commands the README and docs/ show are the CLI's: every `svc <command> [--flag]` of a code
 * block or of the README's command table names a command svc has and options that command takes
 * (checked against the registered cac commands, in process: no spawn per line). The README's
 * quickstart block then runs as written where it can offline — `svc init hello && cd hello`,
 * `svc build` (`--no-deps` added when PyPI does not answer) — in a temp folder, a few seconds.
 * `svc run` (a server until Ctrl+C) and `svc deploy` (a platform) run in their own tests
 * (test/dev/, test/cli/deploy.test.ts), not here.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cac } from "cac";
import { afterAll, describe, expect, it } from "vitest";
import { commands } from "../../cli/commands/index.ts";
import { runSvc } from "../_support/cli.ts";
import { pypiReachable } from "../plugins/_helpers.ts";

const REPO = join(import.meta.dirname, "..", "..");
const DOCS = [
  "README.md",
  ...readdirSync(join(REPO, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => join("docs", f)),
];

/** `svc …` lines of fenced blocks, and of the README's command table's first column. */
function documentedCommands(): Array<{ file: string; line: string }> {
  const out: Array<{ file: string; line: string }> = [];
  for (const file of DOCS) {
    let fenced = false;
    for (const raw of readFileSync(join(REPO, file), "utf8").split("\n")) {
      if (raw.startsWith("```")) fenced = !fenced;
      else if (fenced && /^(npx )?svc /.test(raw.trim()))
        out.push({
          file,
          line: raw
            .trim()
            .replace(/^npx /, "")
            .replace(/\s+#.*$/, ""),
        });
      else if (!fenced && /^\| `svc /.test(raw)) {
        for (const cell of raw.split(/(?<!\\)\|/)[1]!.split(/`,\s*`/)) out.push({ file, line: cell.replace(/`/g, "").trim() });
      }
    }
  }
  return out;
}

describe("the docs' commands", () => {
  it("name commands svc has, with options those commands take", async () => {
    const cli = cac("svc");
    for (const load of Object.values(commands)) (await load())(cli);
    const found = documentedCommands();
    expect(found.length).toBeGreaterThan(20);
    const problems: string[] = [];
    for (const { file, line } of found) {
      for (const part of line.split(/\s*&&\s*/)) {
        const words = part.split(/\s+/);
        if (words[0] !== "svc") continue;
        const command = cli.commands.find((c) => c.name === words[1]);
        if (!command) {
          problems.push(`${file}: "${part}": no command ${words[1]}`);
          continue;
        }
        const taken = new Set(command.options.flatMap((o) => o.rawName.split(/[ ,]+/).filter((n) => n.startsWith("-"))));
        for (const flag of part.match(/(?<=[\s[|])--?[a-zA-Z][\w-]*/g) ?? []) {
          const negated = flag.startsWith("--no-") && taken.has(`--${flag.slice(5)}`); // cac reads --no-x as x = false
          if (!taken.has(flag) && !negated && flag !== "--help") problems.push(`${file}: "${part}": svc ${words[1]} takes no ${flag}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  describe("the README's quickstart, run as written", { timeout: 120_000 }, () => {
    const work = mkdtempSync(join(tmpdir(), "svc-readme-"));
    afterAll(() => rmSync(work, { recursive: true, force: true }));

    it("svc init hello && cd hello; svc build", async () => {
      const env = { ...process.env, NO_COLOR: "1" };
      const init = await runSvc(["init", "hello", "--root", work], { env });
      expect(init.code, init.stderr).toBe(0);
      const online = await pypiReachable();
      const build = await runSvc(["build", ...(online ? [] : ["--no-deps"]), "--root", join(work, "hello")], { env, timeout: 110_000 });
      expect(build.code, build.stderr).toBe(0);
      expect(existsSync(join(work, "hello", ".svc", "artifact.tar.gz"))).toBe(true); // "→ .svc/artifact.tar.gz"
    });
  });
});
