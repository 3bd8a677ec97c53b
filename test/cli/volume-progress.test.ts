/** `svc volume` transfer progress: a redrawn bar with rate and ETA on a terminal, a plain line per 10 % elsewhere. */
import { describe, expect, it } from "vitest";
import { createProgress } from "../../cli/volume/progress.ts";

const sink = () => {
  const out: string[] = [];
  return { out, stream: { write: (text: string) => out.push(text) > 0 } };
};

describe("volume transfer progress", () => {
  it("on a terminal: one bar redrawn in place, with bytes, rate and ETA, and a newline at the end", () => {
    const { out, stream } = sink();
    const p = createProgress(100_000_000, "upload w", stream as never, true);
    p.skip(50_000_000);
    p.line("uploaded a.bin");
    p.sent(50_000_000);
    p.done();
    const text = out.join("");
    expect(text).toMatch(/\r\x1b\[2Kupload w \[#{12}-{12}\] 50% 50\.0 MB\/100\.0 MB [\d.]+ \w?B\/s ETA (\d+:\d\d|--:--)/);
    expect(text).toContain("uploaded a.bin\n");
    expect(text).toMatch(/\[#{24}\] 100% 100\.0 MB\/100\.0 MB .* ETA 0:00\n$/);
  });

  it("elsewhere: plain lines at each 10 % and the end, no control characters", () => {
    const { out, stream } = sink();
    const p = createProgress(1000, "download w", stream as never, false);
    for (let i = 0; i < 100; i++) p.sent(10);
    p.done();
    expect(out.join("")).not.toMatch(/[\r\x1b]/);
    expect(out.map((line) => /download w (\d+)%/.exec(line)?.[1])).toEqual(["10", "20", "30", "40", "50", "60", "70", "80", "90", "100"]);
  });
});
