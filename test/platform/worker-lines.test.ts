/**
 * A worker's output becomes log lines in one pass, with bounded memory: a line longer than
 * MAX_LOG_LINE is cut there with CUT_MARKER and the rest of it dropped, however it is chunked
 * (docs/platform.md, "Worker logs"). The CPU and RSS figures are bench/platform/long-line.ts's.
 */
import { describe, expect, it } from "vitest";
import { LineSplitter } from "../../platform/workers/worker-logs.ts";
import { CUT_MARKER, MAX_LOG_LINE } from "../../platform/store/logs.ts";

/** The lines `chunks` make, pushed one by one, then the end of the stream. */
function split(chunks: string[], max?: number): string[] {
  const lines: string[] = [];
  const splitter = new LineSplitter((line) => lines.push(line), max);
  for (const chunk of chunks) splitter.push(chunk);
  splitter.end();
  return lines;
}

describe("worker output lines", () => {
  it("splits on newlines across chunks, drops a trailing \\r and keeps a last line without a newline", () => {
    expect(split(["a\r\nb", "c\n\nd", "e"])).toEqual(["a", "bc", "", "de"]);
    expect(split(["x\n"])).toEqual(["x"]);
  });

  it("skips a chunk whole (over the log rate): counts the lines it ends, drops the current one, and the text after its last newline starts the next", () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line));
    splitter.push("kept\npart");
    expect(splitter.skip("ial\nx\ny\nnext-")).toEqual({ lines: 3, chars: "ial\nx\ny\n".length });
    expect(splitter.skip("no newline at all")).toEqual({ lines: 0, chars: 17 });
    splitter.push(" rest\nafter\n"); // the line the skipped chunk began is dropped to its end
    splitter.push("last\n");
    expect(lines).toEqual(["kept", "after", "last"]);
  });

  it("cuts a line longer than the limit once, with the marker, and goes on at the next newline", () => {
    const long = "y".repeat(MAX_LOG_LINE * 3 + 5);
    const lines = split(["before\n", long.slice(0, 1000), long.slice(1000, 70_000), long.slice(70_000), "\nafter\n"]);
    expect(lines).toEqual(["before", "y".repeat(MAX_LOG_LINE) + CUT_MARKER, "after"]);
  });

  it("a line of exactly the limit is kept whole; one character more is cut", () => {
    expect(split(["z".repeat(10) + "\n"], 10)).toEqual(["z".repeat(10)]);
    expect(split(["z".repeat(11) + "\nok"], 10)).toEqual(["z".repeat(10) + CUT_MARKER, "ok"]);
  });

  it("cuts within one chunk holding several lines, and at the stream's end when no newline comes", () => {
    expect(split(["ab\n" + "q".repeat(25) + "\ncd\n" + "r".repeat(12)], 10)).toEqual(["ab", "q".repeat(10) + CUT_MARKER, "cd", "r".repeat(10) + CUT_MARKER]);
  });

  it("100 MB on one line in 64 KiB chunks makes one cut line", () => {
    const chunk = "w".repeat(65_536);
    expect(split([...Array(1600).fill(chunk), "\ndone\n"])).toEqual(["w".repeat(MAX_LOG_LINE) + CUT_MARKER, "done"]);
  });
});
