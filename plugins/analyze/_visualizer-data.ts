/**
 * Builds rollup-plugin-visualizer's raw data (`version: 2`) from artifact entries: the artifact is
 * the one "bundle", every file a "module" whose rendered length is its size, folders the tree.
 */
import type { ArtifactEntry } from "../../core/types.ts";

interface TreeNode {
  name: string;
  children: Array<TreeNode | TreeLeaf>;
}
interface TreeLeaf {
  name: string;
  uid: string;
}

export interface VisualizerData {
  version: 2;
  tree: TreeNode;
  nodeParts: Record<string, { renderedLength: number; gzipLength: number; brotliLength: number; metaUid: string }>;
  nodeMetas: Record<string, { id: string; moduleParts: Record<string, string>; imported: never[]; importedBy: never[] }>;
  env: Record<string, unknown>;
  options: { gzip: boolean; brotli: boolean; sourcemap: boolean };
}

export function visualizerData(entries: ArtifactEntry[], bundle: string): VisualizerData {
  const data: VisualizerData = {
    version: 2,
    tree: { name: "root", children: [{ name: bundle, children: [] }] },
    nodeParts: {},
    nodeMetas: {},
    env: { tool: "svc" },
    options: { gzip: false, brotli: false, sourcemap: false },
  };
  const top = data.tree.children[0] as TreeNode;
  const folders = new Map<string, TreeNode>([["", top]]);
  entries.forEach((entry, index) => {
    const parts = entry.path.split("/");
    let parent = top;
    for (let i = 1; i < parts.length; i++) {
      const key = parts.slice(0, i).join("/");
      let folder = folders.get(key);
      if (!folder) {
        folder = { name: parts[i - 1]!, children: [] };
        folders.set(key, folder);
        parent.children.push(folder);
      }
      parent = folder;
    }
    const partUid = `p-${index}`;
    const metaUid = `m-${index}`;
    parent.children.push({ name: parts[parts.length - 1]!, uid: partUid });
    data.nodeParts[partUid] = { renderedLength: entry.size, gzipLength: 0, brotliLength: 0, metaUid };
    data.nodeMetas[metaUid] = { id: entry.path, moduleParts: { [bundle]: partUid }, imported: [], importedBy: [] };
  });
  return data;
}
