#!/usr/bin/env node
// The svc command. Sources are TypeScript; tsx compiles them on the fly (cached) so the package
// needs no build step.
import { register } from "tsx/esm/api";

register();
await import("../cli/index.ts");
