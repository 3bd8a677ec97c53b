/**
 * The base images' facts, in one place (spec 8.1–8.2; docs/deploy.md, "Base images"): which
 * packages each image holds beyond the stdlib. The GPU (PyTorch) image holds the spec's
 * pre-installed set; the slim CPU image holds none of it. The build drops a pre-installed package
 * only when every image its artifact serves holds it (plugins/exclude-preinstalled.ts),
 * svc:check-imports accepts what an endpoint's image holds, and the embedded platform's image
 * environments give a worker exactly its image's set (platform/workers/image-env.ts): what the build
 * drops, the image holds, locally and deployed.
 */
import type { EndpointSpec, ImageConfig } from "./types.ts";

export type ImageKind = keyof ImageConfig;

/** Spec 8.1: the packages the PyTorch base image has installed (distribution = import name). */
export const PREINSTALLED = ["torch", "torchvision", "torchaudio", "numpy", "triton"] as const;

/** What each kind of base image has installed beyond the stdlib. */
export const IMAGE_PACKAGES: Record<ImageKind, readonly string[]> = {
  gpu: PREINSTALLED,
  cpu: [],
};

/** The image an endpoint runs on, by its hardware (load-balanced endpoints follow their own gpu/cpu). */
export const imageKindOf = (endpoint: Pick<EndpointSpec, "hardware">): ImageKind => (endpoint.hardware.gpuIds?.length ? "gpu" : "cpu");

/** The image kind of an image name, for the platform, which sees names only (the defaults and `images` config say gpu/torch). */
export const imageKindOfName = (image: string): ImageKind => (/gpu|torch/i.test(image) ? "gpu" : "cpu");

/**
 * The pre-installed packages a build may leave out of an artifact serving these endpoints: those
 * every endpoint's image holds (one artifact serves them all). An app with a CPU endpoint keeps
 * numpy; an all-GPU app drops the whole set; no endpoints, nothing.
 */
export function droppableFor(endpoints: ReadonlyArray<Pick<EndpointSpec, "hardware">>): string[] {
  const kinds = new Set(endpoints.map(imageKindOf));
  if (kinds.size === 0) return [];
  return PREINSTALLED.filter((name) => [...kinds].every((kind) => IMAGE_PACKAGES[kind].includes(name)));
}
