/**
 * Asks an interpreter what an image made from it would hold: its real executable, its install
 * prefixes and site folders, and — after importing the image's pre-installed packages — the
 * top-level entries of its site folders those imports loaded (the packages and what they need to
 * import), with their metadata folders. docs/platform.md, "Image environments".
 */
import { execFile } from "node:child_process";

export interface InterpreterView {
  /** sys.executable: the interpreter itself (a pyenv shim resolved; a venv kept). */
  executable: string;
  version: string;
  /** sys.prefix, sys.base_prefix and the exec prefixes: where the stdlib lives. */
  prefixes: string[];
  /** The interpreter's site folders (site-packages, dist-packages, the user site): hidden from workers. */
  siteDirs: string[];
  /** Which of the requested packages imported. */
  loaded: string[];
  /** Absolute paths of the site-folder entries the imports loaded, plus their metadata folders. */
  packages: string[];
}

/** Runs with -s -S: the site folders are searched without running their .pth files. */
const PROBE = String.raw`
import importlib, json, os, re, site, sys
prefixes = sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix})
site_dirs = list(dict.fromkeys(site.getsitepackages(prefixes) + [site.getusersitepackages()]))
sys.path.extend(d for d in site_dirs if os.path.isdir(d))
loaded = []
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
        loaded.append(name)
    except Exception:
        pass
roots = set()
for module in list(sys.modules.values()):
    paths = [getattr(module, "__file__", None)] + list(getattr(module, "__path__", None) or [])
    for path in filter(None, paths):
        path = os.path.abspath(path)
        for d in site_dirs:
            if path.startswith(d + os.sep):
                roots.add(os.path.join(d, path[len(d) + 1:].split(os.sep)[0]))
norm = lambda s: re.sub(r"[-_.]+", "_", s).lower()
names = {norm(os.path.basename(r).split(".")[0]) for r in roots}
for d in {os.path.dirname(r) for r in roots}:
    for entry in os.listdir(d):
        if entry.endswith((".dist-info", ".egg-info")) and norm(entry.split("-")[0]) in names:
            roots.add(os.path.join(d, entry))
print(json.dumps({"executable": os.path.abspath(sys.executable), "version": "%d.%d" % sys.version_info[:2],
                  "prefixes": prefixes, "siteDirs": site_dirs, "loaded": loaded,
                  "packages": sorted(r for r in roots if "__pycache__" not in r)}))
`;

export function probeInterpreter(python: string, packages: readonly string[], timeoutMs = 180_000): Promise<InterpreterView> {
  return new Promise((resolve, reject) => {
    execFile(python, ["-s", "-S", "-c", PROBE, JSON.stringify(packages)], { timeout: timeoutMs, maxBuffer: 4_000_000 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`${python} could not be probed: ${(stderr || error.message).trim().split("\n").pop()}`));
      try {
        resolve(JSON.parse(stdout.trim().split("\n").pop()!) as InterpreterView);
      } catch {
        reject(new Error(`${python} answered the probe with: ${stdout.slice(0, 200)}`));
      }
    });
  });
}
