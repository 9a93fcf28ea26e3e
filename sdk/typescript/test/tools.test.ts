/** The tool box: a call runs once, its result is kept until acknowledged. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { ToolBox } from "../src/tools.js";

const call = { response_id: "resp_1", call_id: "call_1", name: "get_weather", arguments: { city: "Paris" } };

test("a call is claimed once; a result is kept until acknowledged", async () => {
  const box = new ToolBox();
  box.register({ name: "get_weather" }, (args) => ({ city: (args as { city: string }).city, temp_c: 8 }));
  assert.deepEqual(box.declarations(), [{ name: "get_weather", description: "", parameters: { type: "object" } }]);
  assert.ok(box.claim(call));
  assert.ok(!box.claim(call));
  const result = await box.run(call);
  assert.deepEqual(result, { type: "tool.result", call_id: "call_1", id: "call_1", output: { city: "Paris", temp_c: 8 } });
  assert.deepEqual(box.unacknowledged.get("call_1"), result);
  box.acknowledged("call_1");
  assert.equal(box.unacknowledged.size, 0);
});

test("a handler that throws answers with an error; an unknown tool is not claimed", async () => {
  const box = new ToolBox();
  box.register({ name: "fails" }, () => {
    throw new TypeError("no network");
  });
  const failing = { ...call, name: "fails" };
  assert.ok(box.claim(failing));
  assert.equal((await box.run(failing))["error"], "TypeError: no network");
  assert.ok(!box.claim({ ...call, call_id: "call_2", name: "unknown" }));
});
