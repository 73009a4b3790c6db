package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// TestHangsNeverPauseTheDeployment: issue 11 item 1, R-CIRCUIT-5, seed 000 ("two such attempts
// in a row pause the provider for that model for 30 seconds. Its other models keep
// answering"): two stream hangs of model-a at d in a row, nothing between, open (d, model-a)
// only; d keeps serving model-b to both official SDKs, model-a fails over to e without calling
// d, and GET /v1/models/{id} and /metrics show the two circuits apart.
func TestHangsNeverPauseTheDeployment(t *testing.T) {
	t.Parallel()
	g := startGateway(t, icHangYAML, oa("d"), oa("e"))
	d := g.Fakes["d"]
	hang := fakeprovider.Behavior{Kind: fakeprovider.KindHang}
	d.Script(hang, hang)

	oc := g.openaiClient()
	streamA := func(wantDep string) {
		t.Helper()
		var hr *http.Response
		st := oc.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "model-a",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr))
		acc := openai.ChatCompletionAccumulator{}
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatalf("model-a stream: %v", err)
		}
		if got := hr.Header.Get("X-Switchyard-Deployment"); got != wantDep || len(acc.Choices) == 0 || acc.Choices[0].Message.Content != hello(wantDep) {
			t.Fatalf("model-a served by %q (%+v), want %s", got, acc.Choices, wantDep)
		}
	}
	streamA("e")
	streamA("e")
	if d.Hits() != 2 {
		t.Fatalf("d hits %d, want 2 (the two hangs)", d.Hits())
	}

	// d's other model keeps answering, on both SDKs, streaming and not.
	for _, stream := range []bool{false, true} {
		var hr *http.Response
		if stream {
			st := oc.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "model-b",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr))
			for st.Next() {
			}
			if err := st.Err(); err != nil {
				t.Fatalf("model-b stream: %v", err)
			}
		} else if _, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "model-b",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr)); err != nil {
			t.Fatalf("model-b: %v", err)
		}
		if got := hr.Header.Get("X-Switchyard-Deployment"); got != "d" {
			t.Fatalf("model-b served by %q, want d", got)
		}
	}
	ac := g.anthropicClient()
	var hr *http.Response
	msg, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "model-b", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}, anthropicopt.WithResponseInto(&hr))
	if err != nil || len(msg.Content) == 0 || msg.Content[0].Text != hello("d") || hr.Header.Get("X-Switchyard-Deployment") != "d" {
		t.Fatalf("model-b over the Anthropic SDK: %v %+v", err, msg)
	}

	// model-a is paused at d only: served by e in one attempt, d not called.
	before := d.Hits()
	streamA("e")
	if d.Hits() != before {
		t.Fatalf("the paused (d, model-a) was called")
	}

	type endpoint struct {
		Deployment        string `json:"deployment"`
		Circuit           string `json:"circuit"`
		DeploymentCircuit string `json:"deployment_circuit"`
		ModelCircuit      string `json:"model_circuit"`
	}
	endpoints := func(model string) map[string]endpoint {
		t.Helper()
		resp, b := icGet(t, g.URL, "/v1/models/"+model)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/models/%s: %d %s", model, resp.StatusCode, b)
		}
		var body struct{ Endpoints []endpoint }
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		out := map[string]endpoint{}
		for _, e := range body.Endpoints {
			out[e.Deployment] = e
		}
		return out
	}
	if got, want := endpoints("model-a")["d"], (endpoint{"d", "open", "closed", "open"}); got != want {
		t.Errorf("model-a at d: %+v, want %+v", got, want)
	}
	if got, want := endpoints("model-a")["e"], (endpoint{"e", "closed", "closed", "closed"}); got != want {
		t.Errorf("model-a at e: %+v, want %+v", got, want)
	}
	if got, want := endpoints("model-b")["d"], (endpoint{"d", "closed", "closed", "closed"}); got != want {
		t.Errorf("model-b at d: %+v, want %+v", got, want)
	}

	_, mb := icGet(t, g.URL, "/metrics")
	for _, line := range []string{
		`switchyard_circuit_state{deployment="d",model="",scope="deployment"} 0`,
		`switchyard_circuit_state{deployment="d",model="model-a",scope="model"} 1`,
		`switchyard_circuit_state{deployment="d",model="model-b",scope="model"} 0`,
		`switchyard_circuit_state{deployment="e",model="model-a",scope="model"} 0`,
	} {
		if !strings.Contains(string(mb), line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}

	// After the cooldown model-a probes d; it answers and (d, model-a) closes: gauge 0.
	g.Clock.Advance(30e9)
	streamA("d")
	// The probe's outcome reaches the circuit just after the stream's last byte reached the
	// caller: poll the gauge rather than race it.
	want := fmt.Sprintf(`switchyard_circuit_state{deployment="d",model="model-a",scope="model"} %d`, 0)
	eventually(t, "/metrics after the probe shows "+want, func() bool {
		_, mb := icGet(t, g.URL, "/metrics")
		return strings.Contains(string(mb), want+"\n")
	})
}

// TestHangThenFailureOpensTheDeployment: issue 25 item 2, seed 000 ("counts on the deployment's
// circuit and on a second circuit for that model at that deployment"): one stream hang of
// model-a at d, then one 500 of model-b at d, is a mixed run of two: d's deployment circuit
// opens, so the next model-a request goes straight to e without calling d, and model-b (served
// only by d) is refused at once with the health 503.
func TestHangThenFailureOpensTheDeployment(t *testing.T) {
	t.Parallel()
	g := startGateway(t, icHangYAML, oa("d"), oa("e"))
	d := g.Fakes["d"]
	d.Script(fakeprovider.Behavior{Kind: fakeprovider.KindHang}, fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 500})

	resp, _ := icCall(t, g.URL, catalog.OpenAI, "model-a", true)
	icServed(t, g, resp, "e", 2)
	resp, b := icPost(t, g.URL, icPath(catalog.OpenAI), icBody(catalog.OpenAI, "model-b", false))
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("model-b: %d %s, want the 502 of d's 500", resp.StatusCode, b)
	}
	if d.Hits() != 2 {
		t.Fatalf("d hits %d, want 2", d.Hits())
	}
	resp, _ = icCall(t, g.URL, catalog.OpenAI, "model-a", true)
	icServed(t, g, resp, "e", 1)
	resp, b = icPost(t, g.URL, icPath(catalog.OpenAI), icBody(catalog.OpenAI, "model-b", false))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Switchyard-Limit-Kind") != "health" {
		t.Fatalf("model-b with d open: %d %s, want 503 health", resp.StatusCode, b)
	}
	if d.Hits() != 2 {
		t.Fatalf("d called while its circuit is open: hits %d", d.Hits())
	}
	_, mb := icGet(t, g.URL, "/metrics")
	if line := `switchyard_circuit_state{deployment="d",model="",scope="deployment"} 1`; !strings.Contains(string(mb), line+"\n") {
		t.Errorf("/metrics lacks %s", line)
	}
}
