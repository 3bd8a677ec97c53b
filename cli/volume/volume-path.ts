/** `<volume>[:<path>]` as the volume commands take it: the volume's name and a key prefix with no `..`. */
import { errors } from "../../core/errors.ts";

export interface VolumePath {
  volume: string;
  path: string;
}

export function parseVolumePath(text: string): VolumePath {
  const at = text.indexOf(":");
  const volume = at < 0 ? text : text.slice(0, at);
  const path = (at < 0 ? "" : text.slice(at + 1)).replace(/^\/+/, "");
  if (!volume) throw errors.VOLUME_PATH_INVALID(text, "the volume name is missing");
  if (path.split("/").some((s) => s === "." || s === "..")) throw errors.VOLUME_PATH_INVALID(text, "'.' and '..' segments are not allowed");
  if (path.includes("//")) throw errors.VOLUME_PATH_INVALID(text, "it has an empty segment ('//')");
  return { volume, path };
}

/** A key prefix that names a folder (`models/` ) or nothing. */
export const asFolder = (path: string) => (path === "" || path.endsWith("/") ? path : `${path}/`);
