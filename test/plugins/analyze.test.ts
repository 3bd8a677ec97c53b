/**
 * svc:analyze's treemap page, rendered in headless Chromium (Debian's `chromium`, driven by
 * playwright-core) and checked for what a user sees: the header's totals against the 1.5 GB limit
 * and the ten largest packages, a legend whose colours are those of the groups' rectangles, sizes
 * on labels and tooltips, and areas in proportion to sizes. The summary the terminal prints is the
 * same one.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ArtifactEntry } from "../../core/types.ts";
import { formatSummary, summarize } from "../../plugins/analyze/_summary.ts";
import { distributionsOf } from "../../plugins/_artifact-groups.ts";
import { renderTreemap, squarify } from "../../plugins/analyze/_treemap.ts";

const CHROMIUM = "/usr/bin/chromium";
const MB = 1_000_000;

/** An image-to-video-like artifact: a big wheel, eleven more packages, the app, svc's runtime, generated files. */
function artifactEntries(): ArtifactEntry[] {
  const entries: ArtifactEntry[] = [
    { path: "main.py", size: 6_000 },
    { path: "wan/model.py", size: 40_000 },
    { path: "wan/vae.py", size: 30_000 },
    { path: "weights/tiny.bin", size: 20 * MB },
    { path: "svc/__init__.py", size: 3_000 },
    { path: "svc/worker.py", size: 9_000 },
    { path: "handlers/video.py", size: 600 },
    { path: "svc_manifest.json", size: 2_000 },
    { path: "requirements.txt", size: 80 },
    { path: "site-packages/av/__init__.py", size: 1_000 },
    { path: "site-packages/av/codec/context.so", size: 40 * MB },
    { path: "site-packages/av.libs/libavcodec.so", size: 63 * MB },
    { path: "site-packages/av-18.1.0.dist-info/RECORD", size: 9_000 },
  ];
  for (let i = 1; i <= 11; i++) entries.push({ path: `site-packages/pkg${String(i).padStart(2, "0")}/core.py`, size: (12 - i) * MB });
  return entries;
}

const artifact = () => {
  const entries = artifactEntries();
  const unpackedSize = entries.reduce((sum, e) => sum + e.size, 0);
  return { entries, unpackedSize, size: Math.round(unpackedSize * 0.9) };
};

describe("the analyze summary", () => {
  it("groups the app's files, each package, svc's runtime and the generated files, with the ten largest packages", () => {
    const summary = summarize(artifact(), "image-to-video", 1.5e9);
    expect(summary.groups.map((g) => g.name).slice(0, 3)).toEqual(["app files", "av", "pkg01"]);
    expect(summary.groups.map((g) => g.kind)).toEqual(["app", ...Array(12).fill("package"), "runtime", "generated"]);
    expect(summary.topPackages.map((p) => p.name)).toEqual(["av", "pkg01", "pkg02", "pkg03", "pkg04", "pkg05", "pkg06", "pkg07", "pkg08", "pkg09"]);
    expect(summary.groups.find((g) => g.name === "av")).toMatchObject({ size: 103_010_000, files: 4 });
    expect(new Set(summary.topPackages.map((p) => p.colour)).size).toBe(10);
    const text = formatSummary(summary);
    expect(text).toContain("artifact of image-to-video: ");
    expect(text).toMatch(/compressed \([\d.]+ % of the 1\.5 GB limit\), [\d.]+ MB unpacked/);
    expect(text).toMatch(/\n {2}av {4}\s+103\.0 MB/);
    expect(text).toContain("largest packages (10 of 12):");
  });

  it("one group per distribution, from the dist-infos' RECORDs: python-dateutil once, console scripts with their package, never `bin` as a package", async () => {
    const deps = mkdtempSync(join(tmpdir(), "svc-analyze-deps-"));
    try {
      const record = (info: string, lines: string[]) => {
        mkdirSync(join(deps, info), { recursive: true });
        writeFileSync(join(deps, info, "RECORD"), `${lines.join("\n")}\n`);
      };
      record("python_dateutil-2.9.0.post0.dist-info", [
        "dateutil/__init__.py,sha256=x,620",
        "dateutil/parser/_parser.py,sha256=y,58796",
        "python_dateutil-2.9.0.post0.dist-info/RECORD,,",
      ]);
      record("charset_normalizer-3.4.0.dist-info", [
        "charset_normalizer/api.py,sha256=z,100",
        "../../bin/normalizer,sha256=w,230",
        "charset_normalizer-3.4.0.dist-info/RECORD,,",
      ]);
      const entries: ArtifactEntry[] = [
        { path: "app.py", size: 100 },
        { path: "site-packages/dateutil/__init__.py", size: 620 },
        { path: "site-packages/dateutil/parser/_parser.py", size: 58_796 },
        { path: "site-packages/python_dateutil-2.9.0.post0.dist-info/RECORD", size: 900 },
        { path: "site-packages/charset_normalizer/api.py", size: 100 },
        { path: "site-packages/charset_normalizer-3.4.0.dist-info/RECORD", size: 300 },
        { path: "site-packages/bin/normalizer", size: 230 },
        { path: "site-packages/bin/orphan-script", size: 50 },
      ];
      const summary = summarize({ entries, size: 1000, unpackedSize: 61_096 }, "app", 1.5e9, await distributionsOf(deps));
      const packages = summary.groups.filter((g) => g.kind === "package");
      expect(packages.map((g) => g.name).sort()).toEqual(["charset-normalizer", "python-dateutil"]);
      expect(packages.find((g) => g.name === "python-dateutil")).toMatchObject({ size: 620 + 58_796 + 900, files: 3 });
      expect(packages.find((g) => g.name === "charset-normalizer")).toMatchObject({ size: 100 + 300 + 230, files: 3 });
      expect(summary.groups.find((g) => g.name.includes("bin"))).toMatchObject({ kind: "generated", name: "console scripts (site-packages/bin/)", size: 50 });
    } finally {
      rmSync(deps, { recursive: true, force: true });
    }
  });

  it("squarifies: rectangles tile the area, each in proportion to its size", () => {
    const sizes = [6, 6, 4, 3, 2, 2, 1];
    const rects = squarify(sizes, { x: 0, y: 0, w: 600, h: 400 });
    const total = sizes.reduce((a, b) => a + b, 0);
    for (const [i, r] of rects.entries()) expect(r.w * r.h).toBeCloseTo((sizes[i]! / total) * 600 * 400, 3);
    for (const r of rects) {
      expect(r.x).toBeGreaterThanOrEqual(-1e-9);
      expect(r.x + r.w).toBeLessThanOrEqual(600 + 1e-6);
      expect(r.y + r.h).toBeLessThanOrEqual(400 + 1e-6);
    }
  });
});

describe.runIf(existsSync(CHROMIUM))("the treemap page in headless Chromium", () => {
  let browser: Browser;
  let dir: string;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    dir = mkdtempSync(join(tmpdir(), "svc-analyze-"));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("shows the totals against the limit, the ten largest packages, a legend in the groups' colours and sizes on labels and tooltips", {
    timeout: 60_000,
  }, async () => {
    const built = artifact();
    const file = join(dir, "analyze.html");
    writeFileSync(file, renderTreemap(summarize(built, "image-to-video", 1.5e9)));
    const page = await browser.newPage();
    await page.goto(pathToFileURL(file).href);

    const totals = await page.textContent("#totals");
    expect(totals).toBe(`${(built.size / MB).toFixed(1)} MB compressed, ${(built.unpackedSize / MB).toFixed(1)} MB unpacked; limit 1.5 GB`);
    expect(await page.locator(".meter .value").allTextContents()).toEqual([
      expect.stringMatching(/^[\d.]+ MB of 1\.5 GB \([\d.]+ %\)$/),
      expect.stringMatching(/^[\d.]+ MB of 1\.5 GB \([\d.]+ %\)$/),
    ]);
    const top = await page.locator("#top-packages li").allTextContents();
    expect(top).toHaveLength(10);
    expect(top[0]).toBe("av 103.0 MB");

    // legend: one entry per group, its swatch the colour of that group's rectangle and cells
    const legend = await page.$$eval("#legend li", (items) =>
      items.map((li) => ({
        group: li.getAttribute("data-group"),
        colour: getComputedStyle(li.querySelector(".swatch")!).backgroundColor,
        text: li.textContent,
      })),
    );
    expect(legend.map((l) => l.group)).toEqual([
      "app files",
      "av",
      ...Array.from({ length: 11 }, (_, i) => `pkg${String(i + 1).padStart(2, "0")}`),
      "svc runtime",
      "generated files",
    ]);
    const groups = await page.$$eval(".group", (nodes) =>
      nodes.map((node) => {
        const box = node.getBoundingClientRect();
        const cell = node.querySelector(".cell");
        return {
          group: node.getAttribute("data-group"),
          border: getComputedStyle(node).borderTopColor,
          cell: cell ? getComputedStyle(cell).backgroundColor : null,
          label: node.querySelector(".label")?.textContent,
          title: node.getAttribute("title"),
          area: box.width * box.height,
        };
      }),
    );
    expect(new Set(legend.map((l) => l.colour)).size).toBe(legend.length); // every group its own colour
    for (const entry of legend) {
      const group = groups.find((g) => g.group === entry.group)!;
      expect(group.border, entry.group!).toBe(entry.colour);
      expect(group.cell, entry.group!).toBe(entry.colour);
      expect(group.label).toMatch(/ [\d.]+ (B|KB|MB|GB)$/);
      expect(group.title).toMatch(/ — [\d.]+ (B|KB|MB|GB) \([\d.]+ %\), \d+ files?$/);
    }
    // areas follow sizes: av is 103.0 MB of the whole
    const whole = groups.reduce((sum, g) => sum + g.area, 0);
    expect(groups.find((g) => g.group === "av")!.area / whole).toBeCloseTo(103_010_000 / built.unpackedSize, 2);
    // a cell's tooltip names its entry and size
    expect(await page.getAttribute('.group[data-group="av"] .cell', "title")).toBe(
      `av: av.libs/ — 63.0 MB (${((63 * MB * 100) / built.unpackedSize).toFixed(1)} %), 1 file`,
    );
    await page.close();
  });

  for (const viewport of [
    { width: 1280, height: 800 },
    { width: 1920, height: 1080 },
  ]) {
    it(`the map fills one ${viewport.width}×${viewport.height} screen: full width, down to the bottom, nothing below the fold`, {
      timeout: 60_000,
    }, async () => {
      const file = join(dir, "analyze.html");
      writeFileSync(file, renderTreemap(summarize(artifact(), "image-to-video", 1.5e9)));
      const page = await browser.newPage({ viewport });
      await page.goto(pathToFileURL(file).href);
      const map = (await page.locator("#treemap").boundingBox())!;
      expect(map.x + map.width).toBeGreaterThan(viewport.width - 20); // no empty band on the right
      expect(map.y + map.height).toBeGreaterThan(viewport.height - 16); // down to the bottom
      expect(map.y + map.height).toBeLessThanOrEqual(viewport.height); // and no further
      expect(await page.evaluate(() => document.documentElement.scrollHeight)).toBeLessThanOrEqual(viewport.height);
      const groups = await page.$$eval(".group", (nodes) =>
        nodes.map((n) => n.getBoundingClientRect()).map((b) => ({ right: b.right, bottom: b.bottom, area: b.width * b.height })),
      );
      const covered = groups.reduce((sum, g) => sum + g.area, 0);
      expect(covered / (map.width * map.height)).toBeGreaterThan(0.98); // the groups tile the map
      await page.close();
    });
  }
});
