package fakeprovider

import (
	"encoding/json"
	"strconv"
)

// The OpenAI Responses API (POST /v1/responses) of an OpenAI-dialect fake (docs/fake-provider.md
// "Responses API"): the same scripted behaviors and answers as chat completions, in the
// Responses shapes. A text answer is one message item; a tool answer (Behavior.ToolCall) one
// function_call item per call, with the function's `namespace` when the request declared it in
// a namespace tool; Behavior.HostedToolCall puts a completed web_search_call item first. The
// stream's preamble is response.created and response.in_progress; its content deltas are
// response.output_text.delta and response.function_call_arguments.delta; it ends with
// response.completed (usage in response.usage). An in-stream error is an `error` event.

// rsUsage is the Responses usage object of a: input_tokens includes the cached tokens.
func (a *answer) rsUsage() map[string]any {
	return map[string]any{
		"input_tokens": a.promptTokens, "input_tokens_details": map[string]any{"cached_tokens": a.cachedTokens},
		"output_tokens": a.outputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": a.promptTokens + a.outputTokens,
	}
}

func (a *answer) rsID() string { return "resp_" + a.id }

// rsItems are a's output items, complete.
func (a *answer) rsItems() []map[string]any {
	var items []map[string]any
	if a.hosted {
		items = append(items, a.rsHostedItem("completed"))
	}
	if len(a.calls) == 0 {
		return append(items, a.rsMessage("completed", a.text))
	}
	for i := range a.calls {
		items = append(items, a.rsCall(i, "completed", a.calls[i].args))
	}
	return items
}

func (a *answer) rsHostedItem(status string) map[string]any {
	return map[string]any{"type": "web_search_call", "id": "ws_" + a.id, "status": status,
		"action": map[string]any{"type": "search", "query": "example"}}
}

func (a *answer) rsMessage(status, text string) map[string]any {
	content := []map[string]any{}
	if status == "completed" {
		content = append(content, map[string]any{"type": "output_text", "text": text, "annotations": []any{}})
	}
	return map[string]any{"type": "message", "id": "msg_" + a.id, "status": status, "role": "assistant", "content": content}
}

func (a *answer) rsCall(i int, status, args string) map[string]any {
	c := a.calls[i]
	item := map[string]any{"type": "function_call", "id": "fc_" + a.id + "_" + strconv.Itoa(i), "call_id": c.id,
		"name": c.name, "arguments": args, "status": status}
	if c.namespace != "" {
		item["namespace"] = c.namespace
	}
	return item
}

// rsResponse is the Response object of a with status and output.
func (a *answer) rsResponse(status string, output []map[string]any, usage bool) map[string]any {
	r := map[string]any{"id": a.rsID(), "object": "response", "created_at": a.created, "status": status,
		"model": a.model, "output": output, "error": nil, "incomplete_details": nil, "parallel_tool_calls": true,
		"tool_choice": "auto", "tools": []any{}, "usage": nil}
	if output == nil {
		r["output"] = []any{}
	}
	if usage {
		r["usage"] = a.rsUsage()
	}
	return r
}

// responsesBody is the non-streaming Responses body of a.
func responsesBody(a *answer) []byte {
	b, _ := json.Marshal(a.rsResponse("completed", a.rsItems(), true)) // plain values always marshal
	return b
}

// responsesFrames is the whole Responses stream of a.
func responsesFrames(a *answer) frames {
	seq := 0
	ev := func(typ string, m map[string]any) []byte {
		m["type"], m["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(m)
		return []byte("event: " + typ + "\ndata: " + string(b) + "\n\n")
	}
	fs := frames{preamble: 2}
	add := func(typ string, m map[string]any, delta bool) {
		fs.list = append(fs.list, frame{data: ev(typ, m), delta: delta})
	}
	add("response.created", map[string]any{"response": a.rsResponse("in_progress", nil, false)}, false)
	add("response.in_progress", map[string]any{"response": a.rsResponse("in_progress", nil, false)}, false)
	n := 0
	if a.hosted {
		add("response.output_item.added", map[string]any{"output_index": n, "item": a.rsHostedItem("in_progress")}, false)
		add("response.output_item.done", map[string]any{"output_index": n, "item": a.rsHostedItem("completed")}, false)
		n++
	}
	if len(a.calls) == 0 {
		id := "msg_" + a.id
		add("response.output_item.added", map[string]any{"output_index": n, "item": a.rsMessage("in_progress", "")}, false)
		add("response.content_part.added", map[string]any{"item_id": id, "output_index": n, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}, false)
		for _, p := range a.pieces {
			add("response.output_text.delta", map[string]any{"item_id": id, "output_index": n, "content_index": 0, "delta": p, "logprobs": []any{}}, true)
		}
		add("response.output_text.done", map[string]any{"item_id": id, "output_index": n, "content_index": 0, "text": a.text, "logprobs": []any{}}, false)
		add("response.content_part.done", map[string]any{"item_id": id, "output_index": n, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": a.text, "annotations": []any{}}}, false)
		add("response.output_item.done", map[string]any{"output_index": n, "item": a.rsMessage("completed", a.text)}, false)
	}
	for i, c := range a.calls {
		id := "fc_" + a.id + "_" + strconv.Itoa(i)
		add("response.output_item.added", map[string]any{"output_index": n, "item": a.rsCall(i, "in_progress", "")}, false)
		for _, p := range c.pieces {
			add("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": n, "delta": p}, true)
		}
		add("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": n, "arguments": c.args}, false)
		add("response.output_item.done", map[string]any{"output_index": n, "item": a.rsCall(i, "completed", c.args)}, false)
		n++
	}
	add("response.completed", map[string]any{"response": a.rsResponse("completed", a.rsItems(), true)}, false)
	return fs
}

// responsesStreamError is the Responses API's in-stream `error` event for e.
func responsesStreamError(e apiError) []byte {
	m := map[string]any{"type": "error", "sequence_number": 0, "code": nullable(e.code), "message": e.message, "param": nullable(e.param)}
	if e.code == "" {
		m["code"] = e.typ
	}
	b, _ := json.Marshal(m)
	return []byte("event: error\ndata: " + string(b) + "\n\n")
}
