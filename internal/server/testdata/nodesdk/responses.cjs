// The official openai npm package's Responses calls against Switchyard, for TestNodeSDKResponses
// (internal/server/nodesdk_test.go). Usage: node responses.cjs BASE_URL MODEL...
// The package is required from $SWITCHYARD_TEST_NODE_MODULES. For each model it makes one
// responses.create call without a stream and one with, and prints one JSON line per call:
// {model, stream, request_id, text, response_model, output_tokens, function_call} or {error}.
const path = require("node:path");
const { OpenAI } = require(path.join(process.env.SWITCHYARD_TEST_NODE_MODULES, "openai"));

const [baseURL, ...models] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "test-key", maxRetries: 0, timeout: 20000 });
const tools = [{
  type: "function", name: "get_weather", strict: false,
  parameters: { type: "object", properties: { city: { type: "string" } } },
}];

async function call(model, stream) {
  const params = { model, instructions: "Be terse.", input: "Hello", tools };
  const out = { model, stream, sdk: require(path.join(process.env.SWITCHYARD_TEST_NODE_MODULES, "openai", "package.json")).version };
  try {
    if (!stream) {
      const { data, response } = await client.responses.create(params).withResponse();
      Object.assign(out, { request_id: response.headers.get("x-request-id"), text: data.output_text,
        response_model: data.model, output_tokens: data.usage.output_tokens });
      return out;
    }
    const { data: events, response } = await client.responses.create({ ...params, stream: true }).withResponse();
    let text = "", completed = null;
    for await (const ev of events) {
      if (ev.type === "response.output_text.delta") text += ev.delta;
      if (ev.type === "response.completed") completed = ev.response;
    }
    Object.assign(out, { request_id: response.headers.get("x-request-id"), text,
      response_model: completed && completed.model, output_tokens: completed && completed.usage.output_tokens });
  } catch (e) {
    out.error = String(e && e.message || e);
  }
  return out;
}

(async () => {
  for (const model of models) {
    for (const stream of [false, true]) {
      console.log(JSON.stringify(await call(model, stream)));
    }
  }
})();
