/**
 * GraphQL at `{url}/graphql`: one JSON POST per operation over ./_http.ts (GraphQL over HTTP needs
 * no more: no client library, no document parsing), errors mapped to the catalogue.
 */
import { errors } from "../errors.ts";
import { httpRequest } from "./http.ts";

/** `signal` ends a request early (a long poll that is no longer wanted). */
export type GraphQLRunner = <T>(operation: string, document: string, variables?: Record<string, unknown>, signal?: AbortSignal) => Promise<T>;

interface GraphQLAnswer {
  data?: unknown;
  errors?: Array<{ message?: string }>;
}

export function createGraphQLRunner(baseUrl: string, apiKey: string): GraphQLRunner {
  const url = `${baseUrl}/graphql`;
  const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json", accept: "application/graphql-response+json, application/json" };
  return async <T>(operation: string, document: string, variables?: Record<string, unknown>, signal?: AbortSignal): Promise<T> => {
    const response = await httpRequest(baseUrl, url, { method: "POST", headers, body: JSON.stringify({ query: document, variables }), signal });
    const answer = response.json as GraphQLAnswer | undefined;
    const messages = answer?.errors?.map((e) => e.message).filter((m): m is string => Boolean(m)) ?? [];
    if (messages.some((m) => /unauthori[sz]ed|invalid api key/i.test(m))) throw errors.AUTH_FAILED(baseUrl);
    if (messages.length) throw errors.PLATFORM_ERROR(operation, messages.join("; "));
    if (response.status >= 300 || answer?.data === undefined || answer.data === null) {
      throw errors.PLATFORM_ERROR(operation, `HTTP ${response.status}: ${response.text.slice(0, 500)}`);
    }
    return answer.data as T;
  };
}

const ENDPOINT_FIELDS = `id name type gpuIds gpuCount instanceIds idleTimeout scalerType scalerValue workersMin workersMax
  executionTimeoutMs templateId imageName env { key value } environmentId buildId url networkVolumeId createdAt`;
const ENVIRONMENT_FIELDS = `id name appId activeBuildId endpoints { ${ENDPOINT_FIELDS} }`;
const APP_FIELDS = `id name createdAt environments { ${ENVIRONMENT_FIELDS} }`;
const BUILD_FIELDS = `id appId sha256 size manifest createdAt`;

/**
 * Every operation the CLI sends, by name (the name is what PLATFORM_ERROR reports). Endpoints go
 * through the hosted platform's own operations (myself.endpoints, myself.endpoint, saveEndpoint,
 * deleteEndpoint); apps, environments, builds and workerLogs are the deploy tool's (docs/contracts.md).
 */
export const documents = {
  secrets: `query secrets { myself { secrets { id name createdAt } } }`,
  secretCreate: `mutation secretCreate($input: SecretCreateInput!) { secretCreate(input: $input) { id name createdAt } }`,
  secretDelete: `mutation secretDelete($name: String!) { secretDelete(name: $name) }`,
  apps: `query apps { apps { ${APP_FIELDS} } }`,
  app: `query app($name: String!) { app(name: $name) { ${APP_FIELDS} } }`,
  createApp: `mutation createApp($name: String!) { createApp(name: $name) { ${APP_FIELDS} } }`,
  deleteApp: `mutation deleteApp($id: String!) { deleteApp(id: $id) }`,
  environment: `query environment($appId: String!, $name: String!) { environment(appId: $appId, name: $name) { ${ENVIRONMENT_FIELDS} } }`,
  createEnvironment: `mutation createEnvironment($appId: String!, $name: String!) { createEnvironment(appId: $appId, name: $name) { ${ENVIRONMENT_FIELDS} } }`,
  deleteEnvironment: `mutation deleteEnvironment($id: String!) { deleteEnvironment(id: $id) }`,
  myselfEndpoints: `query myselfEndpoints { myself { endpoints { ${ENDPOINT_FIELDS} } } }`,
  myselfEndpoint: `query myselfEndpoint($id: String!) { myself { endpoint(id: $id) { ${ENDPOINT_FIELDS} } } }`,
  saveEndpoint: `mutation saveEndpoint($input: EndpointInput!) { saveEndpoint(input: $input) { ${ENDPOINT_FIELDS} } }`,
  deleteEndpoint: `mutation deleteEndpoint($id: String!) { deleteEndpoint(id: $id) }`,
  prepareArtifactUpload: `mutation prepareArtifactUpload($appId: String!, $size: Int!, $sha256: String) {
    prepareArtifactUpload(appId: $appId, size: $size, sha256: $sha256) { uploadUrl objectKey expiresAt alreadyUploaded } }`,
  finalizeArtifactUpload: `mutation finalizeArtifactUpload($objectKey: String!, $manifest: JSON!) {
    finalizeArtifactUpload(objectKey: $objectKey, manifest: $manifest) { ${BUILD_FIELDS} } }`,
  deployBuildToEnvironment: `mutation deployBuildToEnvironment($environmentId: String!, $buildId: String!) {
    deployBuildToEnvironment(environmentId: $environmentId, buildId: $buildId) { ${ENVIRONMENT_FIELDS} } }`,
  getBuild: `query getBuild($id: String!) { getBuild(id: $id) { ${BUILD_FIELDS} } }`,
  setBuildEndpointUrls: `mutation setBuildEndpointUrls($buildId: String!, $urls: JSON!) {
    setBuildEndpointUrls(buildId: $buildId, urls: $urls) { ${BUILD_FIELDS} } }`,
  workerLogs: `query workerLogs($endpointId: String!, $limit: Int) { workerLogs(endpointId: $endpointId, limit: $limit) }`,
} as const;
