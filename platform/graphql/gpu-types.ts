/**
 * `gpuTypes`: the hosted query's shape over this platform's GPU groups. A GPU type here is one of the
 * groups endpoints name in `gpuIds` (AMPERE_16 …), since that is what an endpoint can ask for; its
 * memory comes from the group's name. Prices are 0 (this machine costs nothing per hour) and the
 * hardware facts it cannot know are neutral — docs/contracts.md, "Hosted GraphQL compatibility".
 */
import { ENDPOINT_LIMITS, GPU_GROUPS } from "../../core/endpoint-schema.ts";

const ARCHITECTURE: Record<string, string> = { AMPERE: "Ampere", ADA: "Ada Lovelace" };

function gpuType(group: string) {
  const [family = "", memory = "0", pro] = group.split("_");
  const memoryInGb = Number(memory);
  const maxGpuCount = ENDPOINT_LIMITS.gpuCount.max;
  return {
    id: group,
    displayName: `${ARCHITECTURE[family] ?? family} ${memoryInGb} GB${pro ? " Pro" : ""} (${group}, emulated)`,
    manufacturer: "Nvidia",
    memoryInGb,
    maxGpuCount,
    maxGpuCountSecureCloud: maxGpuCount,
    maxGpuCountCommunityCloud: 0,
    minPodGpuCount: ENDPOINT_LIMITS.gpuCount.min,
    cudaCores: 0,
    secureCloud: true,
    communityCloud: false,
    securePrice: 0,
    communityPrice: 0,
    oneWeekPrice: 0,
    oneMonthPrice: 0,
    threeMonthPrice: 0,
    sixMonthPrice: 0,
    secureSpotPrice: 0,
    communitySpotPrice: 0,
    lowestPrice: () => ({ gpuName: group, gpuTypeId: group, minimumBidPrice: 0, uninterruptablePrice: 0, stockStatus: "High" }),
  };
}

const GPU_TYPES = GPU_GROUPS.map(gpuType);

/** All GPU types, or those named by `filter.id` / `filter.ids` (an unknown id answers none, as hosted). */
export function gpuTypes(filter: { id?: string | null; ids?: readonly string[] | null } | null | undefined) {
  const wanted = new Set([...(filter?.id ? [filter.id] : []), ...(filter?.ids ?? [])]);
  return wanted.size === 0 ? GPU_TYPES : GPU_TYPES.filter((type) => wanted.has(type.id));
}
