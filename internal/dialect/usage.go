// Package dialect holds what every wire dialect shares: the canonical usage, and (with the
// translation issue) the canonical request and stream-event types that codecs translate through.
// The per-dialect packages (dialect/openai, dialect/anthropic) import this one, never each other.
package dialect

// Usage is provider-reported token usage in one canonical, additive form: the prompt is
// Input + Cached + CacheWrite tokens (Anthropic's convention; OpenAI's prompt_tokens includes
// cached tokens, so Input = prompt_tokens - cached - cache_write there). Output includes
// Reasoning, which is reported separately as a subset; CacheWrite includes CacheWrite1h, the
// one-hour cache writes (Anthropic's cache_creation.ephemeral_1h_input_tokens), billed at
// their own price (docs/pricing.md). All counts are tokens, except WebSearchRequests.
type Usage struct {
	Input        int64 `json:"input"`
	Cached       int64 `json:"cached"`
	CacheWrite   int64 `json:"cache_write"`
	CacheWrite1h int64 `json:"cache_write_1h"`
	Output       int64 `json:"output"`
	Reasoning    int64 `json:"reasoning"`
	// WebSearchRequests is the count of server-side web searches the provider ran for the
	// request, billed per call at the price's web_search (docs/pricing.md "Server-tool calls"):
	// Anthropic's usage.server_tool_use.web_search_requests, the Responses API's web_search_call
	// output items whose action is a search.
	WebSearchRequests int64 `json:"web_search_requests"`
}
