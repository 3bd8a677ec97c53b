/**
 * One endpoint: its workers (state, limits, node, GPU), schedule with its next run, charts of the
 * last hour, jobs (filter by status; timings; input size; a failed job's error and traceback) and
 * logs (follow, search). Each part refreshes itself while the page is open; `stop()` ends that.
 */
import { get } from "./api.ts";
import { Charts } from "./charts.ts";
import { bytes, dateTime, h, ms, table, time } from "./dom.ts";
import type { EndpointDetail, JobRow, LogPage, SeriesPoint } from "./types.ts";

const STATUSES = ["", "IN_QUEUE", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"];
const JOBS_MS = 1000;
const LOGS_MS = 1000;
const DETAIL_MS = 2000;
const SERIES_MS = 5000;

export interface EndpointPage {
  nodes: Node[];
  stop(): void;
}

function workersPart(d: EndpointDetail): Node[] {
  const problem = d.problem ? [h("p", { class: "error", role: "alert" }, `${d.problem.error_type}: ${d.problem.error_message}`)] : [];
  return [
    table(
      `Workers of ${d.name}`,
      ["Worker", "State", "Node", "GPU", "Limits", "Memory", "Cold start", "Started"],
      d.workerList.map((w) => [
        h("code", {}, w.id),
        h("td", { class: `state-${w.state}` }, w.state + (w.outdated ? " (outdated)" : "")),
        w.node,
        w.gpus.length ? w.gpus.join(", ") : "–",
        w.limits ? `${w.limits.flavour}: ${bytes(w.limits.memoryBytes)}, ${w.limits.vcpus} vCPU (${w.limits.enforced.join(", ") || "none held"})` : "–",
        bytes(w.memoryBytes),
        ms(w.coldStartMs),
        time(w.startedAt),
      ]),
      `No workers running (${d.workersMin}–${d.workersMax} allowed; they start with work).`,
    ),
    ...problem,
  ];
}

function schedulePart(d: EndpointDetail): Node {
  if (!d.schedule) return h("p", { class: "muted" }, "No schedule.");
  const s = d.schedule;
  return h(
    "dl",
    { class: "kv" },
    h("dt", {}, "Cron"),
    h("dd", {}, h("code", {}, s.cron), s.timezone ? ` (${s.timezone})` : ""),
    h("dt", {}, "Next run"),
    h("dd", {}, dateTime(s.nextRunAt)),
    h("dt", {}, "Last run"),
    h("dd", {}, `${dateTime(s.lastRunAt)}${s.lastStatus ? ` · ${s.lastStatus}` : ""}`),
    h("dt", {}, "Skipped runs"),
    h("dd", {}, String(s.skipped)),
  );
}

function jobRow(j: JobRow, open: Set<string>): HTMLElement[] {
  let errorCell: Node | string = "–";
  if (j.error) {
    const details = h(
      "details",
      { "data-job": j.id },
      h("summary", {}, `${j.error.type ?? "Error"}: ${j.error.message.slice(0, 80)}`),
      j.error.traceback ? h("pre", { class: "traceback", "aria-label": `Traceback of job ${j.id}` }, j.error.traceback) : h("p", {}, j.error.message),
    );
    details.open = open.has(j.id);
    details.addEventListener("toggle", () => (details.open ? open.add(j.id) : open.delete(j.id)));
    errorCell = details;
  }
  return [
    h("code", {}, j.id),
    h("td", { class: `status-${j.status}` }, j.status),
    time(j.createdAt),
    ms(j.delayMs),
    ms(j.executionMs),
    bytes(j.inputBytes),
    j.attempts > 1 ? String(j.attempts) : "1",
    h("td", { class: "wrap" }, errorCell),
  ] as HTMLElement[];
}

export async function endpointPage(id: string): Promise<EndpointPage> {
  const path = `endpoints/${encodeURIComponent(id)}`;
  const first = await get<EndpointDetail>(path);
  const timers: number[] = [];
  const every = (fn: () => Promise<void>, interval: number) => {
    let busy = false;
    const tick = () => {
      if (busy) return;
      busy = true;
      fn()
        .catch(() => undefined)
        .finally(() => (busy = false));
    };
    tick();
    timers.push(window.setInterval(tick, interval));
  };

  const workers = h("div", { id: "workers" });
  const schedule = h("div", { id: "schedule" });
  let shownDetail = "";
  const renderDetail = (d: EndpointDetail) => {
    // Drawn again only when it changed: a keyboard user's focus stays where it is.
    const text = JSON.stringify([d.workerList, d.schedule, d.problem]);
    if (text === shownDetail) return;
    shownDetail = text;
    workers.replaceChildren(...workersPart(d));
    schedule.replaceChildren(schedulePart(d));
  };
  renderDetail(first);
  every(async () => renderDetail(await get<EndpointDetail>(path)), DETAIL_MS);

  const charts = new Charts();
  every(async () => charts.update((await get<{ points: SeriesPoint[] }>(`${path}/series`)).points), SERIES_MS);

  // Jobs: newest first, refreshed every second; an open traceback stays open across refreshes.
  const statusFilter = h("select", { id: "job-status" }, ...STATUSES.map((s) => h("option", { value: s }, s || "any status")));
  const jobsBox = h("div", { id: "jobs", "aria-live": "polite" });
  const open = new Set<string>();
  let shownJobs = "";
  const refreshJobs = async () => {
    const jobs = await get<JobRow[]>(`${path}/jobs?limit=50${statusFilter.value ? `&status=${statusFilter.value}` : ""}`);
    const text = JSON.stringify(jobs);
    if (text === shownJobs) return;
    shownJobs = text;
    jobsBox.replaceChildren(
      table(
        `Newest jobs of ${first.name}`,
        ["Job", "Status", "Created", "Queued", "Ran", "Input", "Attempts", "Error"],
        jobs.map((j) => jobRow(j, open)),
        "No jobs.",
      ),
    );
  };
  statusFilter.addEventListener("change", () => void refreshJobs());
  every(refreshJobs, JOBS_MS);

  // Logs: the newest lines, then (following) the ones after the last cursor; a search asks the server again.
  const follow = h("input", { type: "checkbox", id: "log-follow", checked: true });
  const search = h("input", { type: "search", id: "log-search", placeholder: "text in a line" });
  const logBox = h("pre", { class: "log", id: "logs", tabindex: "0", "aria-label": `Log lines of ${first.name}` });
  let cursor: number | null = null;
  const showLines = (page: LogPage, replace: boolean) => {
    const text = page.lines.map((l) => `${time(l.at)} ${l.workerId} ${l.line}`).join("\n");
    if (replace) logBox.textContent = text;
    else if (text) logBox.textContent += (logBox.textContent ? "\n" : "") + text;
    if (page.cursor !== null) cursor = page.cursor;
    if (follow.checked && text) logBox.scrollTop = logBox.scrollHeight;
  };
  const q = () => (search.value.trim() ? `&search=${encodeURIComponent(search.value.trim())}` : "");
  const reloadLogs = async () => showLines(await get<LogPage>(`${path}/logs?limit=500${q()}`), true);
  search.addEventListener("change", () => void reloadLogs());
  await reloadLogs().catch(() => undefined);
  every(async () => {
    if (follow.checked && cursor !== null) showLines(await get<LogPage>(`${path}/logs?after=${cursor}&limit=1000${q()}`), false);
    else if (follow.checked) await reloadLogs();
  }, LOGS_MS);

  const nodes: Node[] = [
    h("p", {}, h("a", { href: "#/" }, "← Apps")),
    h("h1", {}, `${first.name} `, h("span", { class: "muted" }, first.type)),
    h(
      "dl",
      { class: "kv panel" },
      h("dt", {}, "Id"),
      h("dd", {}, h("code", {}, first.id)),
      h("dt", {}, "URL"),
      h("dd", {}, h("code", {}, first.url)),
      h("dt", {}, "Workers"),
      h("dd", {}, `${first.workersMin}–${first.workersMax}`),
      h("dt", {}, "Execution timeout"),
      h("dd", {}, ms(first.executionTimeoutMs)),
    ),
    h("h2", {}, "Last hour"),
    charts.element,
    h("h2", {}, "Workers"),
    workers,
    h("h2", {}, "Schedule"),
    schedule,
    h("h2", {}, "Jobs"),
    h("div", { class: "toolbar" }, h("label", { for: "job-status" }, "Status"), statusFilter),
    jobsBox,
    h("h2", {}, "Logs"),
    h("div", { class: "toolbar" }, h("label", {}, follow, " Follow"), h("label", { for: "log-search" }, "Search"), search),
    logBox,
  ];
  return {
    nodes,
    stop() {
      for (const t of timers) clearInterval(t);
      charts.destroy();
    },
  };
}
