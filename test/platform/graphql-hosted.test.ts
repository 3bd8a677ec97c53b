/**
 * The hosted operations of the GraphQL API on a real embedded platform, without PyPI (the SDK
 * itself runs in hosted-sdk.test.ts): the hosted input shapes (FLASHBOOT as an enum literal or a
 * string), updateEndpointTemplate, gpuTypes filters, myself.endpoint, the neutral values of fields
 * with no meaning here (docs/contracts.md), bad input answered as errors, and svc's own client
 * reading endpoints through the hosted operations.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient } from "../../core/client/index.ts";
import { gql, gqlOk, startTestPlatform, type TestPlatform } from "./_support.ts";

let p: TestPlatform;

beforeAll(async () => {
  p = await startTestPlatform();
});
afterAll(async () => {
  await p.dispose();
});

const template = async (name: string, imageName: string) =>
  (
    await gqlOk<{ saveTemplate: { id: string } }>(
      p,
      `mutation { saveTemplate(input: {name: "${name}", imageName: "${imageName}", dockerArgs: "", containerDiskInGb: 5, volumeInGb: 0, ports: "", env: [], isServerless: true, containerRegistryAuthId: "", startSsh: true, isPublic: false, readme: ""}) { id } }`,
    )
  ).saveTemplate.id;

describe("hosted GraphQL operations", () => {
  it("saveEndpoint takes flashBootType as the hosted enum literal and as a string, and answers it", async () => {
    const t = await template("flash", "svc/worker-cpu:py3.11");
    const literal = await gqlOk<any>(
      p,
      `mutation { saveEndpoint(input: {name: "fb-literal", templateId: "${t}", gpuIds: "AMPERE_16", flashBootType: FLASHBOOT, allowedCudaVersions: "12.4,12.5"}) { id flashBootType allowedCudaVersions computeType } }`,
    );
    expect(literal.saveEndpoint).toMatchObject({ flashBootType: "FLASHBOOT", allowedCudaVersions: null, computeType: "GPU" });
    const variable = await gqlOk<any>(p, "mutation($i: EndpointInput!) { saveEndpoint(input: $i) { flashBootType computeType } }", {
      i: { name: "fb-string", templateId: t, instanceIds: ["cpu3c-2-4"], flashBootType: "FLASHBOOT" },
    });
    expect(variable.saveEndpoint).toEqual({ flashBootType: "FLASHBOOT", computeType: "CPU" });
  });

  it("updateEndpointTemplate points an endpoint at another template; unknown ids are NOT_FOUND", async () => {
    const first = await template("first", "svc/worker-cpu:py3.11");
    const second = await template("second", "svc/worker-gpu:py3.11-torch");
    const { saveEndpoint: ep } = await gqlOk<any>(p, `mutation { saveEndpoint(input: {name: "moves", templateId: "${first}", gpuIds: "ADA_24"}) { id } }`);
    const moved = await gqlOk<any>(
      p,
      `mutation { updateEndpointTemplate(input: {templateId: "${second}", endpointId: "${ep.id}"}) { id templateId imageName name gpuIds template { id imageName volumeInGb isPublic } } }`,
    );
    expect(moved.updateEndpointTemplate).toEqual({
      id: ep.id,
      templateId: second,
      imageName: "svc/worker-gpu:py3.11-torch",
      name: "moves",
      gpuIds: "ADA_24",
      template: { id: second, imageName: "svc/worker-gpu:py3.11-torch", volumeInGb: 0, isPublic: false },
    });
    const badEndpoint = await gql(p, `mutation { updateEndpointTemplate(input: {templateId: "${second}", endpointId: "ep_nope"}) { id } }`);
    expect(badEndpoint.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
    const badTemplate = await gql(p, `mutation { updateEndpointTemplate(input: {templateId: "tpl_nope", endpointId: "${ep.id}"}) { id } }`);
    expect(badTemplate.status).toBeLessThan(500);
    expect(badTemplate.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
  });

  it("gpuTypes lists the GPU groups and filters by id and ids (an unknown id answers none)", async () => {
    const all = await gqlOk<any>(p, "{ gpuTypes { id displayName memoryInGb manufacturer secureCloud communityCloud } }");
    expect(all.gpuTypes).toHaveLength(7);
    expect(all.gpuTypes.find((g: { id: string }) => g.id === "ADA_48_PRO")).toMatchObject({
      memoryInGb: 48,
      manufacturer: "Nvidia",
      secureCloud: true,
      communityCloud: false,
    });
    const some = await gqlOk<any>(
      p,
      '{ gpuTypes(input: {ids: ["AMPERE_80", "ADA_24"]}) { id lowestPrice(input: {gpuCount: 2}) { minimumBidPrice uninterruptablePrice } } }',
    );
    expect(some.gpuTypes).toEqual([
      { id: "ADA_24", lowestPrice: { minimumBidPrice: 0, uninterruptablePrice: 0 } },
      { id: "AMPERE_80", lowestPrice: { minimumBidPrice: 0, uninterruptablePrice: 0 } },
    ]);
    expect((await gqlOk<any>(p, '{ gpuTypes(input: {id: "NVIDIA A40"}) { id } }')).gpuTypes).toEqual([]);
  });

  it("myself answers the hosted user fields and one endpoint by id", async () => {
    const { saveEndpoint: ep } = await gqlOk<any>(p, 'mutation { saveEndpoint(input: {name: "mine", instanceIds: ["cpu3c-2-4"]}) { id } }');
    const me = await gqlOk<any>(
      p,
      `query($id: String!) { myself { id pubKey networkVolumes { id } endpoint(id: $id) { id name userId version workersStandby aiKey networkVolume { id } } } }`,
      { id: ep.id },
    );
    expect(me.myself).toEqual({
      id: "local",
      pubKey: null,
      networkVolumes: [],
      endpoint: { id: ep.id, name: "mine", userId: "local", version: 0, workersStandby: 0, aiKey: null, networkVolume: null },
    });
    expect((await gqlOk<any>(p, '{ myself { endpoint(id: "ep_nope") { id } } }')).myself.endpoint).toBeNull();
  });

  it("out-of-range hosted template fields are refused as errors, never a 5xx", async () => {
    const r = await gql(p, 'mutation { saveTemplate(input: {name: "t", imageName: "i", volumeInGb: -1}) { id } }');
    expect(r.status).toBeLessThan(500);
    expect(r.errors?.[0]?.extensions?.code).toBe("BAD_REQUEST");
    expect(r.errors?.[0]?.message).toContain("volumeInGb");
  });

  it("svc's client reads one endpoint through the hosted myself.endpoint", async () => {
    const client = createPlatformClient({ url: p.url, apiKey: p.apiKey });
    const { saveEndpoint: ep } = await gqlOk<any>(p, 'mutation { saveEndpoint(input: {name: "by-client", instanceIds: ["cpu3c-2-4"]}) { id } }');
    expect(await client.getEndpoint(ep.id)).toMatchObject({ id: ep.id, name: "by-client", url: `${p.url}/v2/${ep.id}` });
    expect(await client.getEndpoint("ep_nope")).toBeNull();
  });
});
