/** The endpoint's last hour as four small uPlot charts, from /console/api/endpoints/<id>/series. */
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h } from "./dom.ts";
import type { SeriesPoint } from "./types.ts";

interface ChartSpec {
  title: string;
  unit: string;
  lines: Array<{ label: string; value: (p: SeriesPoint) => number | null; stroke: string }>;
}

const SPECS: ChartSpec[] = [
  {
    title: "Queue depth",
    unit: "jobs",
    lines: [
      { label: "queued", value: (p) => p.queued, stroke: "#0b5cad" },
      { label: "running", value: (p) => p.running, stroke: "#1a7f37" },
    ],
  },
  { title: "Throughput", unit: "jobs/s", lines: [{ label: "ended/s", value: (p) => p.throughput, stroke: "#0b5cad" }] },
  {
    title: "Execution time",
    unit: "ms",
    lines: [
      { label: "p50", value: (p) => p.p50, stroke: "#0b5cad" },
      { label: "p99", value: (p) => p.p99, stroke: "#b42318" },
    ],
  },
  {
    title: "Cold starts",
    unit: "workers · s",
    lines: [
      { label: "cold starts", value: (p) => p.coldStarts, stroke: "#8250df" },
      { label: "mean time (s)", value: (p) => (p.coldStartMs === null ? null : p.coldStartMs / 1000), stroke: "#bf8700" },
    ],
  },
];

export class Charts {
  readonly element = h("div", { class: "charts" });
  private readonly plots: Array<{ spec: ChartSpec; plot: uPlot; box: HTMLElement }> = [];
  private readonly observers: ResizeObserver[] = [];

  constructor() {
    for (const spec of SPECS) {
      const box = h("figure", { class: "panel chart", role: "group", "aria-label": `${spec.title} over the last hour` }, h("h3", {}, spec.title));
      this.element.append(box);
      const options: uPlot.Options = {
        width: 300,
        height: 160,
        legend: { show: true, live: false },
        scales: { x: { time: true } },
        axes: [{}, { label: spec.unit, size: 50 }],
        series: [{}, ...spec.lines.map((l) => ({ label: l.label, stroke: l.stroke, width: 2, points: { show: true, size: 5 } }))],
      };
      const plot = new uPlot(options, [[], ...spec.lines.map(() => [])], box);
      this.plots.push({ spec, plot, box });
      // As wide as its box, whatever the screen: a phone's column or a quarter of a wide one.
      const observer = new ResizeObserver(() => plot.setSize({ width: Math.max(200, box.clientWidth - 26), height: 160 }));
      observer.observe(box);
      this.observers.push(observer);
    }
  }

  update(points: SeriesPoint[]): void {
    const xs = points.map((p) => p.t / 1000);
    for (const { spec, plot, box } of this.plots) {
      plot.setData([xs, ...spec.lines.map((l) => points.map(l.value))] as uPlot.AlignedData);
      box.dataset.points = String(points.length);
    }
  }

  destroy(): void {
    for (const observer of this.observers) observer.disconnect();
    for (const { plot } of this.plots) plot.destroy();
  }
}
