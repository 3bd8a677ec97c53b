/**
 * `GET /docs`: Swagger UI over `/openapi.json`, served from the installed swagger-ui-dist package
 * (no CDN: the explorer works offline).
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);

/** The files of swagger-ui-dist the page needs; nothing else under /docs/ is served. */
export const DOCS_ASSETS: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "index.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
  "favicon-16x16.png": "image/png",
  "favicon-32x32.png": "image/png",
};

let distDir: string | undefined;
export function swaggerDistDir(): string {
  return (distDir ??= dirname(require.resolve("swagger-ui-dist/package.json")));
}

export async function readDocsAsset(name: string): Promise<{ body: Buffer; type: string } | undefined> {
  const type = DOCS_ASSETS[name];
  if (!type) return undefined;
  return { body: await readFile(join(swaggerDistDir(), name)), type };
}

export function docsHtml(title: string): string {
  const safe = title.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>${safe} — API explorer</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <link rel="stylesheet" href="/docs/index.css">
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/swagger-ui-standalone-preset.js"></script>
  <script>
    window.ui = SwaggerUIBundle({
      url: "/openapi.json",
      dom_id: "#swagger-ui",
      deepLinking: true,
      tryItOutEnabled: true,
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
      layout: "BaseLayout",
    });
  </script>
</body>
</html>
`;
}
