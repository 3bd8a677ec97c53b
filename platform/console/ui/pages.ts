/** The overview (apps, environments, endpoints), volumes with their use, and builds with what each deployed. */
import { get } from "./api.ts";
import { bytes, dateTime, h, table } from "./dom.ts";
import type { AppBuilds, EndpointSummary, Overview, Volume } from "./types.ts";

const endpointLink = (e: { id: string; name: string }) => h("a", { href: `#/endpoints/${encodeURIComponent(e.id)}` }, e.name);

function endpointsTable(caption: string, endpoints: EndpointSummary[]): HTMLElement {
  return table(
    caption,
    ["Endpoint", "Type", "Workers", "Queued", "Running", "URL"],
    endpoints.map((e) => [
      endpointLink(e),
      `${e.type}${e.gpu ? " · GPU" : ""}${e.scheduled ? " · scheduled" : ""}`,
      `${e.workers} (${e.workersMin}–${e.workersMax})`,
      e.queued,
      e.running,
      h("td", { class: "wrap" }, h("code", {}, e.url)),
    ]),
    "No endpoints.",
  );
}

export async function overviewPage(): Promise<Node[]> {
  const data = await get<Overview>("overview");
  const out: Node[] = [h("h1", {}, "Apps")];
  if (data.apps.length === 0 && data.other.length === 0) out.push(h("p", { class: "muted" }, "Nothing deployed yet: `svc deploy` an app, or `svc run` one."));
  for (const app of data.apps) {
    const section = h("section", { "aria-label": `App ${app.name}` }, h("h2", {}, app.name));
    for (const env of app.environments)
      section.append(h("h3", {}, `Environment ${env.name}`), endpointsTable(`Endpoints of ${app.name} / ${env.name}`, env.endpoints));
    out.push(section);
  }
  if (data.other.length)
    out.push(h("section", { "aria-label": "Other endpoints" }, h("h2", {}, "Other endpoints"), endpointsTable("Endpoints of no environment", data.other)));
  return out;
}

export async function volumesPage(): Promise<Node[]> {
  const volumes = await get<Volume[]>("volumes");
  return [
    h("h1", {}, "Volumes"),
    table(
      "Network volumes",
      ["Name", "Used", "Size", "Use", "Endpoints", "Created"],
      volumes.map((v) => {
        const share = v.usedBytes === null ? null : v.usedBytes / (v.sizeGb * 1e9);
        return [
          v.name,
          bytes(v.usedBytes),
          `${v.sizeGb} GB`,
          share === null ? "–" : h("meter", { min: "0", max: "1", value: String(share), "aria-label": `${v.name} used` }, `${(share * 100).toFixed(1)} %`),
          h("td", { class: "wrap" }, ...v.endpoints.flatMap((e, i) => [i ? ", " : "", endpointLink(e)])),
          dateTime(v.createdAt),
        ];
      }),
      "No volumes.",
    ),
  ];
}

export async function buildsPage(): Promise<Node[]> {
  const apps = await get<AppBuilds[]>("builds");
  const out: Node[] = [h("h1", {}, "Builds")];
  if (apps.length === 0) out.push(h("p", { class: "muted" }, "No builds yet."));
  for (const app of apps)
    out.push(
      h("h2", {}, app.app),
      table(
        `Builds of ${app.app}, newest first`,
        ["Build", "Created", "Size", "Endpoints it deployed", "Active in"],
        app.builds.map((b) => [
          h("code", {}, b.id),
          dateTime(b.createdAt),
          bytes(b.sizeBytes),
          h("td", { class: "wrap" }, b.endpoints.join(", ")),
          b.activeIn.join(", ") || "–",
        ]),
      ),
    );
  return out;
}
