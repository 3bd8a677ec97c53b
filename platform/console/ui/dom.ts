/** Building the page without a framework: elements from tag, attributes and children; the figures' formats. */
type Child = Node | string | number | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | EventListener> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === "function") el.addEventListener(name.replace(/^on/, ""), value);
    else if (value === true) el.setAttribute(name, "");
    else if (value !== false) el.setAttribute(name, value);
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(typeof child === "number" ? String(child) : child);
  return el;
}

/** A table with a header row, scrolling sideways on a narrow screen; `empty` says so when there are no rows. */
export function table(caption: string, headers: string[], rows: Child[][], empty = "None yet."): HTMLElement {
  if (rows.length === 0) return h("p", { class: "muted" }, empty);
  return h(
    "div",
    { class: "scroll" },
    h(
      "table",
      {},
      h("caption", { class: "muted", style: "text-align:left" }, caption),
      h("thead", {}, h("tr", {}, ...headers.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, ...rows.map((row) => h("tr", {}, ...row.map((cell) => (cell instanceof HTMLTableCellElement ? cell : h("td", {}, cell)))))),
    ),
  );
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export function ms(n: number | null | undefined): string {
  if (n === null || n === undefined) return "–";
  return n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(2)} s`;
}

export const time = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleTimeString() : "–");
export const dateTime = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : "–");
