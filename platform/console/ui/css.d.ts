// The stylesheets main.ts and charts.ts import for their side effect: esbuild bundles them (scripts/build-console.ts).
declare module "*.css";
