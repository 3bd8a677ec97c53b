/** S3's XML answers, written by hand (a few fixed shapes), and the one request body S3 sends as XML here. */
import type { S3Error } from "./s3-error.ts";

const NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"';

const escapeXml = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, "");

type XmlValue = string | number | boolean | undefined | XmlNode | XmlNode[];
export interface XmlNode {
  [element: string]: XmlValue;
}

function render(value: XmlValue): string {
  if (value === undefined) return "";
  if (typeof value !== "object") return escapeXml(String(value));
  if (Array.isArray(value)) return value.map(render).join("");
  return Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => (Array.isArray(v) ? v.map((item) => `<${k}>${render(item)}</${k}>`).join("") : `<${k}>${render(v)}</${k}>`))
    .join("");
}

/** An answer's document: elements, or text (GetBucketLocation's region). */
export const xmlDocument = (root: string, body: XmlNode | string) => `<?xml version="1.0" encoding="UTF-8"?>\n<${root} ${NS}>${render(body)}</${root}>`;

export const errorXml = (error: S3Error, requestId: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error>${render({ Code: error.code, Message: error.message, Resource: error.resource, RequestId: requestId })}</Error>`;

const unescapeXml = (s: string) =>
  s.replace(/&(#x[0-9a-f]+|#\d+|lt|gt|amp|quot|apos);/gi, (_, e: string) =>
    e[0] === "#"
      ? String.fromCodePoint(e[1] === "x" || e[1] === "X" ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1)))
      : ({ lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" } as Record<string, string>)[e.toLowerCase()]!,
  );

/** The text of each `<tag>…</tag>` in `xml` (no nesting of the same tag: S3's request bodies have none). */
export function elements(xml: string, tag: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`, "g");
  for (let m = re.exec(xml); m; m = re.exec(xml)) out.push(m[1]!);
  return out;
}

export const textOf = (xml: string, tag: string): string | undefined => {
  const [first] = elements(xml, tag);
  return first === undefined ? undefined : unescapeXml(first.trim());
};
