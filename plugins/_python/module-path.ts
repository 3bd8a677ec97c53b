/** `a/b.py` → `a.b`, `a/__init__.py` → `a`: the module a Python file is imported as. */
export function modulePath(file: string): string {
  const parts = file.replace(/\.py$/, "").split("/");
  if (parts.length > 1 && parts[parts.length - 1] === "__init__") parts.pop();
  return parts.join(".");
}
