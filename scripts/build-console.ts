/**
 * `npm run build`'s last step: the console's page, script and styles into dist/console/, which the
 * published package serves (platform/console/assets.ts; a checkout builds them on first request).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { BUILT_DIR, buildConsoleAssets } from "../platform/console/assets.ts";

const assets = await buildConsoleAssets();
mkdirSync(BUILT_DIR, { recursive: true });
writeFileSync(`${BUILT_DIR}/index.html`, assets.html);
writeFileSync(`${BUILT_DIR}/console.js`, assets.js);
writeFileSync(`${BUILT_DIR}/console.css`, assets.css);
console.log(`console: ${BUILT_DIR} (script ${(assets.js.length / 1024).toFixed(0)} KiB, styles ${(assets.css.length / 1024).toFixed(0)} KiB)`);
