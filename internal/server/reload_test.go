package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/config"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// reloadBefore serves gpt-4o-mini from "old" (and the dearer "new"), claude-haiku-4-5 from
// "steady" then "rekeyed"; callers use key k1.
const reloadBefore = `
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models: [{id: gpt-4o-mini}, {id: claude-haiku-4-5}]
deployments:
  - {name: old, dialect: openai, base_url: "{{old}}", api_key: sk-old, routes: [{model: gpt-4o-mini, price: {input: 1, output: 1}}]}
  - {name: new, dialect: openai, base_url: "{{new}}", api_key: sk-new, routes: [{model: gpt-4o-mini, price: {input: 5, output: 5}}]}
  - {name: steady, dialect: anthropic, base_url: "{{steady}}", api_key: sk-steady, routes: [{model: claude-haiku-4-5, price: {input: 1, output: 1}}]}
  - {name: rekeyed, dialect: anthropic, base_url: "{{rekeyed}}", api_key: sk-rekeyed, routes: [{model: claude-haiku-4-5, price: {input: 2, output: 2}}]}
keys: [{name: k1, secret: key-one-0123456789}]
`

// reloadAfter drops "old", gives "rekeyed" a new provider key, and replaces k1 by k2.
const reloadAfter = `
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models: [{id: gpt-4o-mini}, {id: claude-haiku-4-5}]
deployments:
  - {name: new, dialect: openai, base_url: "{{new}}", api_key: sk-new, routes: [{model: gpt-4o-mini, price: {input: 5, output: 5}}]}
  - {name: steady, dialect: anthropic, base_url: "{{steady}}", api_key: sk-steady, routes: [{model: claude-haiku-4-5, price: {input: 1, output: 1}}]}
  - {name: rekeyed, dialect: anthropic, base_url: "{{rekeyed}}", api_key: sk-rekeyed-2, routes: [{model: claude-haiku-4-5, price: {input: 2, output: 2}}]}
keys: [{name: k2, secret: key-two-0123456789}]
`

func depCircuit(set *circuit.Set, deployment string) circuit.State {
	for _, st := range set.States() {
		if st.Deployment == deployment && st.Model == "" {
			return st.State
		}
	}
	return circuit.Closed
}

// TestReloadStreamInFlight: a stream that started before a reload finishes on the old
// snapshot (its deployment, its key) while requests after the reload see the new deployments
// and keys; the circuits of an unchanged deployment are kept, those of a re-keyed one reset.
func TestReloadStreamInFlight(t *testing.T) {
	g := startGateway(t, reloadBefore, oa("old"), oa("new"), an("steady"), an("rekeyed"))
	ctx := context.Background()
	k1 := g.openaiClient(openaiopt.WithAPIKey("key-one-0123456789"))
	k2 := g.openaiClient(openaiopt.WithAPIKey("key-two-0123456789"))

	// Open the circuits of both anthropic deployments: two requests, each failing on both.
	g.Fakes["steady"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 500}, fp.Behavior{Kind: fp.KindStatus, Status: 500})
	g.Fakes["rekeyed"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 500}, fp.Behavior{Kind: fp.KindStatus, Status: 500})
	for range 2 {
		_, _ = k1.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-haiku-4-5",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	}
	if depCircuit(g.Srv.Circuits(), "steady") != circuit.Open || depCircuit(g.Srv.Circuits(), "rekeyed") != circuit.Open {
		t.Fatalf("circuits before the reload: %+v", g.Srv.Circuits().States())
	}

	// A slow stream on "old", read past its first chunk.
	const text = "one two three four five six seven eight"
	g.Fakes["old"].Script(fp.Behavior{Text: text, Deltas: 8, Delay: 150e6})
	var raw *http.Response
	stream := k1.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count")}}, openaiopt.WithResponseInto(&raw))
	var got strings.Builder
	for got.Len() == 0 && stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			got.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if got.Len() == 0 {
		t.Fatalf("stream did not start: %v", stream.Err())
	}

	// Reload: the same fakes, at the addresses the gateway knows them by.
	after := reloadAfter
	for _, d := range g.Srv.Config().Deployments {
		after = strings.ReplaceAll(after, "{{"+d.Name+"}}", d.BaseURL)
	}
	cfg, err := config.Parse("after.yaml", []byte(after))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Srv.Reload(cfg, cat); err != nil {
		t.Fatalf("reload: %v", err)
	}

	// New requests: k1 is gone, k2 is served by "new".
	_, err = k1.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Errorf("k1 after the reload: %v; want 401", err)
	}
	var rawNew *http.Response
	if _, err := k2.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, openaiopt.WithResponseInto(&rawNew)); err != nil {
		t.Fatalf("k2 after the reload: %v", err)
	}
	if d := rawNew.Header.Get("X-Switchyard-Deployment"); d != "new" {
		t.Errorf("after the reload gpt-4o-mini was served by %q, want new", d)
	}

	// The stream finishes on the old snapshot, whole.
	chunksAfter := 0
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			got.WriteString(c.Choices[0].Delta.Content)
			chunksAfter++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream across the reload: %v", err)
	}
	if got.String() != text || chunksAfter == 0 {
		t.Errorf("stream across the reload gave %q (%d chunks after the reload), want %q", got.String(), chunksAfter, text)
	}
	if d := raw.Header.Get("X-Switchyard-Deployment"); d != "old" {
		t.Errorf("stream served by %q, want old", d)
	}
	rec := g.generation(t, raw.Header.Get("X-Request-Id"))
	if len(rec.Attempts) != 1 || rec.Attempts[0].Deployment != "old" || rec.Attempts[0].Outcome != "completed" {
		t.Errorf("stream audit: %+v", rec.Attempts)
	}
	if n := g.Fakes["old"].Hits(); n != 1 {
		t.Errorf("old got %d requests, want only the stream", n)
	}

	// Circuits: steady (unchanged) still open, rekeyed (new api_key) reset.
	if st := depCircuit(g.Srv.Circuits(), "steady"); st != circuit.Open {
		t.Errorf("unchanged deployment's circuit after the reload: %v, want open", st)
	}
	if st := depCircuit(g.Srv.Circuits(), "rekeyed"); st != circuit.Closed {
		t.Errorf("re-keyed deployment's circuit after the reload: %v, want closed (reset)", st)
	}
}
