package dialect

import "encoding/json"

// The canonical chat types: every dialect's codec decodes a request, a response and stream
// events into these and encodes from them, once (R-DIALECT-2). Same-dialect traffic never uses
// them: it keeps the pass-through path (R-DIALECT-3).

// Role is a canonical message role.
type Role string

// The canonical roles. System text is hoisted into Request.System; Tool results travel as
// PartToolResult parts of a RoleUser message (the Anthropic shape, which keeps several results of
// one assistant turn together).
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// PartType is the kind of a content part.
type PartType string

// The canonical part types.
const (
	PartText             PartType = "text"
	PartImage            PartType = "image"             // ImageURL, or MediaType + Data (base64)
	PartDocument         PartType = "document"          // a PDF: MediaType + Data (base64), or ImageURL for a URL
	PartToolCall         PartType = "tool_call"         // assistant: ToolCallID, ToolName, Arguments (JSON text)
	PartToolResult       PartType = "tool_result"       // user: ToolCallID, IsError, Content
	PartThinking         PartType = "thinking"          // assistant: Text, Signature
	PartRedactedThinking PartType = "redacted_thinking" // assistant: Data (opaque)
	PartRefusal          PartType = "refusal"           // assistant: Text
)

// Part is one piece of message content; which fields are set depends on Type.
type Part struct {
	Type PartType
	Text string
	// ImageURL is an http(s) URL of an image or document.
	ImageURL string
	// MediaType and Data are an inline base64 image or document ("image/png", "application/pdf").
	MediaType string
	Data      string
	// ToolCallID links a tool call and its result; ToolName and Arguments (a JSON object as text)
	// describe the call.
	ToolCallID string
	ToolName   string
	// Namespace is the Responses namespace of a tool call's function (ToolName is its name
	// inside it); empty for a plain function. Fit flattens it for the upstream.
	Namespace string
	Arguments string
	// ArgumentsParam is where the caller sent Arguments, in the caller's dialect
	// ("messages[1].tool_calls[0].function.arguments", "input[2].arguments"): an encoder that
	// refuses the arguments (an Anthropic tool_use needs a JSON object nested at most MaxDepth
	// levels) names it. Empty when the part did not come from a caller's request.
	ArgumentsParam string
	// IsError marks a failed tool result; Content is the result's text and image parts.
	IsError bool
	Content []Part
	// Signature is a thinking block's signature, kept across tool turns.
	Signature string
}

// Message is one conversation turn.
type Message struct {
	Role  Role
	Parts []Part
}

// Tool is a client function tool.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments; nil means an empty object schema.
	Parameters json.RawMessage
	Strict     *bool
	// Type is "" for a client function tool. Otherwise it is the provider's type of a tool that
	// is not a plain function (an Anthropic server tool such as "web_search_20250305" or
	// "bash_20250124"): encoders of a dialect that cannot run it refuse the request with
	// invalid_request rather than drop it (wire.md §5.7).
	Type string
	// Namespace is the Responses `namespace` tool this function belongs to (Name is its name
	// inside the namespace); empty for a top-level function. Fit flattens it.
	Namespace string
}

// ToolChoice says whether and which tool the model must call.
type ToolChoice struct {
	// Mode is "" (unset: the dialect's default), "auto", "none", "required" (any tool) or "tool".
	Mode string
	// Name is the tool to call when Mode is "tool"; Namespace its Responses namespace, if any.
	Name      string
	Namespace string
	// DisableParallel asks for at most one tool call (OpenAI parallel_tool_calls: false).
	DisableParallel bool
}

// ResponseFormat is a structured-output request that both dialects can express faithfully.
type ResponseFormat struct {
	// Name of the schema (OpenAI json_schema.name); synthesized when the caller's dialect has none.
	Name   string
	Schema json.RawMessage
	Strict bool
}

// Request is a chat request in canonical form.
type Request struct {
	Model string
	// System is the system (and developer) text, in order, hoisted from wherever it appeared.
	System   []string
	Messages []Message
	// MaxTokens is the output cap in tokens; 0 means the request did not set one.
	MaxTokens   int64
	Temperature *float64
	TopP        *float64
	TopK        *int64
	Stop        []string
	Stream      bool
	// IncludeUsage is the OpenAI caller's stream_options.include_usage.
	IncludeUsage     bool
	Tools            []Tool
	ToolChoice       ToolChoice
	ResponseFormat   *ResponseFormat
	ReasoningEffort  string // OpenAI reasoning_effort / Anthropic output_config.effort
	ThinkingBudget   int64  // Anthropic thinking.budget_tokens (0: off or adaptive)
	ThinkingAdaptive bool   // Anthropic thinking {"type":"adaptive"}
	User             string // OpenAI safety_identifier or user / Anthropic metadata.user_id
	PromptCacheKey   string // OpenAI prompt_cache_key (session affinity; never forwarded to Anthropic)
	// Dropped lists the caller's parameters that the target dialect cannot carry and that were
	// dropped (R-DIALECT-2); the audit reports them as dropped_params.
	Dropped []string
}

// StopReason is a canonical stop reason; it maps to each dialect's value without flattening
// where the dialect can say it (wire.md §5.3).
type StopReason string

// The canonical stop reasons (Anthropic's vocabulary, which is the richer one).
const (
	StopEndTurn       StopReason = "end_turn"
	StopMaxTokens     StopReason = "max_tokens"
	StopSequence      StopReason = "stop_sequence"
	StopToolUse       StopReason = "tool_use"
	StopRefusal       StopReason = "refusal" // OpenAI content_filter
	StopPauseTurn     StopReason = "pause_turn"
	StopContextWindow StopReason = "model_context_window_exceeded"
)

// Response is a non-streaming answer in canonical form.
type Response struct {
	ID string
	// Parts are the assistant's output in order: text, thinking, refusal and tool-call parts.
	Parts        []Part
	Stop         StopReason
	StopSequence string
	Usage        Usage
	UsageSeen    bool
}

// EventType is the kind of a canonical stream event.
type EventType uint8

// The canonical stream events. Start and Signature-free lifecycle events never commit an
// attempt; every other event except Done and Error is semantic output (R-FAIL-2).
const (
	EventStart     EventType = iota + 1 // the message began (lifecycle): ID
	EventText                           // a text delta: Text
	EventReasoning                      // a thinking/reasoning delta: Text
	EventSignature                      // a thinking block's signature: Text
	EventToolCall                       // a tool call began: ToolIndex, ID, Name
	EventToolArgs                       // a fragment of a tool call's arguments: ToolIndex, Text
	EventRefusal                        // a refusal delta: Text
	EventFinish                         // the stop reason: Stop, StopSequence
	EventUsage                          // cumulative usage so far: Usage
	EventDone                           // the normal end of the stream
	EventError                          // an in-stream error: Raw is the provider's event data
)

// Event is one canonical stream event. Text is a JSON string literal, quotes included, exactly
// as the provider escaped it (both dialects carry text as JSON strings, so encoders copy it
// without unescaping); it and Raw alias the provider's frame and are valid until the next frame.
type Event struct {
	Type EventType
	Text []byte
	Raw  []byte
	ID   string
	Name string
	// Namespace is, on EventToolCall, the caller's Responses namespace of the called function
	// (set by the relay from Fit's aliases); empty otherwise.
	Namespace    string
	ToolIndex    int // 0-based index of the tool call in this response (not a content-block index)
	Stop         StopReason
	StopSequence string
	Usage        Usage
}

// Semantic reports whether the event is output that commits an attempt (R-FAIL-2). EventUsage
// is not: a provider may report usage on every chunk, and a report alone commits nothing (the
// final report follows the finish, which commits, or precedes the end of stream).
func (e EventType) Semantic() bool {
	switch e {
	case EventText, EventReasoning, EventSignature, EventToolCall, EventToolArgs, EventRefusal, EventFinish:
		return true
	}
	return false
}

// Drop records that the parameter name was accepted but not forwarded (R-DIALECT-2), once.
func (r *Request) Drop(name string) {
	for _, d := range r.Dropped {
		if d == name {
			return
		}
	}
	r.Dropped = append(r.Dropped, name)
}
