import { defineConfig } from "@svc-dev/svc";

export default defineConfig({
  app: "{{name}}",
  pythonVersion: "3.11",
  // Packages to leave out of the artifact, on top of the pre-installed ones:
  exclude: [],
});
