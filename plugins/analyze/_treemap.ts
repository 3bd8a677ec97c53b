/**
 * `.svc/analyze.html`: the artifact as a squarified treemap (Bruls, Huizing and van Wijk), laid out
 * here so the page is static HTML and CSS with no script: one rectangle per colour group (the app's
 * files, each package, svc's runtime, the generated files), inside it one per entry below the
 * group's root; a header with the compressed and unpacked totals against the limit and the ten
 * largest packages; a legend. Every rectangle has its size on its label and in its tooltip. The map
 * fills what the header and legend leave of one screen, whatever its size: laid out on a 16:9
 * canvas and placed in percentages of its box (areas keep their proportions when the box stretches).
 */
import { formatBytes } from "../../core/format-bytes.ts";
import type { AnalysisSummary, ColourGroup } from "./_summary.ts";

interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** The layout's canvas (a common screen's shape); the page scales it to the window. */
const WIDTH = 1600;
const HEIGHT = 900;
/** A group's children beyond this many are shown as one "(n more)" cell. */
const MAX_CELLS = 40;
const LABEL_H = 18;

/** Rectangles for `sizes` (biggest first, all > 0) filling `rect`, rows chosen to keep them square. */
export function squarify(sizes: readonly number[], rect: Rect): Rect[] {
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total <= 0 || rect.w <= 0 || rect.h <= 0) return sizes.map(() => ({ x: rect.x, y: rect.y, w: 0, h: 0 }));
  const scale = (rect.w * rect.h) / total;
  const areas = sizes.map((s) => s * scale);
  const out: Rect[] = [];
  const free = { ...rect };
  const worst = (row: number[], side: number) => {
    const sum = row.reduce((a, b) => a + b, 0);
    return Math.max(...row.map((a) => Math.max((side * side * a) / (sum * sum), (sum * sum) / (side * side * a))));
  };
  const place = (row: number[]) => {
    const sum = row.reduce((a, b) => a + b, 0);
    if (free.w >= free.h) {
      const width = sum / free.h;
      let y = free.y;
      for (const a of row) {
        out.push({ x: free.x, y, w: width, h: a / width });
        y += a / width;
      }
      free.x += width;
      free.w -= width;
    } else {
      const height = sum / free.w;
      let x = free.x;
      for (const a of row) {
        out.push({ x, y: free.y, w: a / height, h: height });
        x += a / height;
      }
      free.y += height;
      free.h -= height;
    }
  };
  let row: number[] = [];
  for (let i = 0; i < areas.length; ) {
    const side = Math.min(free.w, free.h);
    const next = [...row, areas[i]!];
    if (row.length === 0 || worst(next, side) <= worst(row, side)) {
      row = next;
      i++;
    } else {
      place(row);
      row = [];
    }
  }
  if (row.length) place(row);
  return out;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const pct = (n: number, of: number) => `${of > 0 ? Math.round((n / of) * 1e5) / 1e3 : 0}%`;
/** `r` placed inside a parent of `outer`'s size, in percentages of it. */
const box = (r: Rect, outer: { w: number; h: number }) =>
  `left:${pct(r.x, outer.w)};top:${pct(r.y, outer.h)};width:${pct(r.w, outer.w)};height:${pct(r.h, outer.h)}`;
const share = (part: number, whole: number) => (whole > 0 ? `${((part / whole) * 100).toFixed(1)} %` : "-");

function cells(group: ColourGroup): Array<{ name: string; size: number; files: number }> {
  const shown = group.children.filter((c) => c.size > 0).slice(0, MAX_CELLS);
  const rest = group.children.filter((c) => c.size > 0).slice(MAX_CELLS);
  if (rest.length) shown.push({ name: `(${rest.length} more)`, size: rest.reduce((a, c) => a + c.size, 0), files: rest.reduce((a, c) => a + c.files, 0) });
  return shown;
}

function renderGroup(group: ColourGroup, r: Rect, total: number): string {
  const title = `${group.name} — ${formatBytes(group.size)} (${share(group.size, total)}), ${group.files} file${group.files === 1 ? "" : "s"}`;
  const inner: Rect = { x: 2, y: r.h > LABEL_H * 2 ? LABEL_H : 2, w: Math.max(0, r.w - 4), h: Math.max(0, r.h - (r.h > LABEL_H * 2 ? LABEL_H : 2) - 2) };
  const parts = cells(group);
  const rects = squarify(
    parts.map((c) => c.size),
    inner,
  );
  const children = parts
    .map((cell, i) => {
      const tip = `${group.name}: ${cell.name} — ${formatBytes(cell.size)} (${share(cell.size, total)}), ${cell.files} file${cell.files === 1 ? "" : "s"}`;
      return `<div class="cell" style="${box(rects[i]!, r)};background:${group.colour}" title="${escapeHtml(tip)}"><span>${escapeHtml(cell.name)} ${formatBytes(cell.size)}</span></div>`;
    })
    .join("");
  return `<div class="group" data-group="${escapeHtml(group.name)}" data-kind="${group.kind}" style="${box(r, { w: WIDTH, h: HEIGHT })};border-color:${group.colour}" title="${escapeHtml(title)}"><span class="label">${escapeHtml(group.name)} ${formatBytes(group.size)}</span>${children}</div>`;
}

export function renderTreemap(summary: AnalysisSummary): string {
  const groups = summary.groups.filter((g) => g.size > 0);
  const rects = squarify(
    groups.map((g) => g.size),
    { x: 0, y: 0, w: WIDTH, h: HEIGHT },
  );
  const meter = (label: string, size: number) => {
    const used = summary.limit > 0 ? Math.min(1, size / summary.limit) : 0;
    return `<div class="meter"><span class="what">${label}</span><span class="bar"><span style="width:${(used * 100).toFixed(1)}%;background:${size > summary.limit ? "#c0392b" : "#2f6db5"}"></span></span><span class="value">${formatBytes(size)} of ${formatBytes(summary.limit)} (${share(size, summary.limit)})</span></div>`;
  };
  const packages = summary.topPackages.length
    ? `<ol id="top-packages">${summary.topPackages.map((p) => `<li><span class="swatch" style="background:${p.colour}"></span>${escapeHtml(p.name)} <b>${formatBytes(p.size)}</b></li>`).join("")}</ol>`
    : `<p id="top-packages">No installed packages.</p>`;
  const legend = summary.groups
    .map(
      (g) =>
        `<li data-group="${escapeHtml(g.name)}"><span class="swatch" style="background:${g.colour}"></span>${escapeHtml(g.name)} <b>${formatBytes(g.size)}</b></li>`,
    )
    .join("");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(summary.app)} artifact — svc build --analyze</title>
<style>
html,body{height:100%}
body{font:13px system-ui,sans-serif;margin:0;padding:12px 16px;box-sizing:border-box;color:#222;display:flex;flex-direction:column}
h1{font-size:18px;margin:0 0 8px}
#summary{display:flex;gap:32px;align-items:flex-start;margin-bottom:12px}
.meter{display:flex;gap:8px;align-items:center;margin:4px 0}.meter .what{width:90px}
.meter .bar{display:inline-block;width:220px;height:10px;background:#eee;border-radius:3px;overflow:hidden}.meter .bar span{display:block;height:100%}
#top-packages{margin:0;padding-left:24px;columns:2;column-gap:56px}
.swatch{display:inline-block;width:11px;height:11px;margin-right:5px;vertical-align:-1px;border-radius:2px}
#legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:6px 16px;margin:0 0 10px}
#treemap{position:relative;flex:1;min-height:360px;background:#fafafa}
.group{position:absolute;box-sizing:border-box;border:2px solid;background:#fff;overflow:hidden}
.group>.label{position:absolute;left:4px;top:1px;font-weight:600;white-space:nowrap}
.cell{position:absolute;box-sizing:border-box;border:1px solid #fff;overflow:hidden;color:#fff}
.cell span{display:block;padding:2px 3px;font-size:11px;white-space:nowrap;text-shadow:0 0 2px #0008}
</style></head><body>
<header id="summary"><div><h1>${escapeHtml(summary.app)} artifact</h1>
<p id="totals">${formatBytes(summary.compressed)} compressed, ${formatBytes(summary.unpacked)} unpacked; limit ${formatBytes(summary.limit)}</p>
${meter("compressed", summary.compressed)}${meter("unpacked", summary.unpacked)}</div>
<div><h2 style="font-size:14px;margin:0 0 4px">Largest packages</h2>${packages}</div></header>
<ul id="legend">${legend}</ul>
<div id="treemap">${groups.map((g, i) => renderGroup(g, rects[i]!, summary.unpacked)).join("")}</div>
</body></html>
`;
}
