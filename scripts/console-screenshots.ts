/**
 * The screenshots of docs/console.md: a real embedded platform, an app deployed with the real CLI
 * (`svc deploy`), a minute of jobs (some failing) for the charts, then the console's main pages in
 * headless Chromium at 1280×800 and on a phone (390×844). Run: `npx tsx scripts/console-screenshots.ts`.
 */
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { createPlatformClient } from "../core/client/index.ts";
import { startTemporaryPlatform } from "../platform/temporary.ts";
import { volumeDir } from "../platform/volumes/paths.ts";
import { runSvc } from "../test/_support/cli.ts";

const OUT = new URL("../docs/images/", import.meta.url).pathname;
const SECONDS_OF_JOBS = Number(process.env.SHOT_SECONDS ?? 60);

const WORKER = `import json
import time

from svc import Endpoint


def parse(text):
    return json.loads(text)


@Endpoint(name="resize", cpu="cpu3c-2-4", workers=(0, 2))
def resize(text: str, seconds: float = 0.05) -> dict:
    time.sleep(seconds)
    if text.startswith("{"):
        return parse(text)
    print(f"resized {text}")
    return {"size": len(text)}
`;

const platform = await startTemporaryPlatform({ consoleSampleMs: 2000 });
const root = await mkdtemp(join(tmpdir(), "svc-console-shots-"));
try {
  await cp(new URL("../fixtures/deploy-app/", import.meta.url).pathname, root, { recursive: true });
  await writeFile(join(root, "resize.py"), WORKER);
  const env = { ...process.env, NO_COLOR: "1", PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey };
  const deployed = await runSvc(["deploy", "--json", "--root", root], { env, timeout: 180_000 });
  if (deployed.code !== 0) throw new Error(deployed.stderr);
  const client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
  const volume = await client.graphql<{ createNetworkVolume: { id: string } }>(
    "createNetworkVolume",
    'mutation createNetworkVolume { createNetworkVolume(input: { name: "models", size: 1 }) { id } }',
  );
  await writeFile(join(volumeDir(platform.dataDir, volume.createNetworkVolume.id), "weights.bin"), Buffer.alloc(120_000_000, 1));
  const resize = (await client.getApp("deploy-app"))!.environments[0]!.endpoints.find((e) => e.name === "resize")!;

  // Jobs keep coming while the pages are taken: the workers show busy, the charts fill.
  let loading = true;
  const load = (async () => {
    for (let i = 0; loading; i++) {
      const burst = 1 + (i % 5);
      await Promise.all(
        Array.from({ length: burst }, (_, j) =>
          client.runsync(resize.id, { text: (i + j) % 9 === 0 ? "{broken" : `image-${i}-${j}`, seconds: 0.05 + (j % 3) * 0.1 }),
        ),
      );
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, SECONDS_OF_JOBS * 1000));

  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const shot = (name: string, fullPage = false) => page.screenshot({ path: join(OUT, `console-${name}.png`), fullPage });
  await page.goto(`${platform.url}/console`);
  await shot("sign-in");
  await page.getByLabel("API key").fill(platform.apiKey);
  await page.getByLabel("API key").press("Enter");
  await page.getByRole("link", { name: "resize" }).waitFor();
  await shot("apps");
  await page.getByRole("link", { name: "resize" }).click();
  await page.locator("figure[data-points]").first().waitFor();
  await page.waitForTimeout(1500);
  await shot("endpoint");
  await page.getByLabel("Status").selectOption("FAILED");
  await page.locator("#jobs summary").first().waitFor();
  await page.locator("#jobs summary").first().click();
  await page.locator("#jobs pre.traceback").first().scrollIntoViewIfNeeded();
  await shot("traceback");
  await page.locator("#logs").scrollIntoViewIfNeeded();
  await shot("logs");
  await page.goto(`${platform.url}/console#/volumes`);
  await page.locator("h1", { hasText: "Volumes" }).waitFor();
  await shot("volumes");
  await page.goto(`${platform.url}/console#/builds`);
  await page.locator("h1", { hasText: "Builds" }).waitFor();
  await shot("builds");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${platform.url}/console#/endpoints/${resize.id}`);
  await page.locator("figure[data-points]").first().waitFor();
  await page.waitForTimeout(1500);
  await shot("phone");
  await browser.close();
  loading = false;
  await load;
  console.log(`screenshots in ${OUT}`);
} finally {
  await platform.dispose();
  await rm(root, { recursive: true, force: true });
}
