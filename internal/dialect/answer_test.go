package dialect_test

import (
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// TestCheckAnswer: a provider 200 body passes through only when it answers something (nothing
// ends in an empty 200); everything else is an upstream_error, which fails over.
func TestCheckAnswer(t *testing.T) {
	cases := []struct {
		body, answer string
		emptyOK, ok  bool
	}{
		{`{"choices":[{"index":0}]}`, "choices", false, true},
		{`{"choices":[]}`, "choices", false, false},
		{`{}`, "choices", false, false},
		{`{"error":{"message":"OK"}}`, "choices", false, false},
		{`{"choices":[{}],"error":{"message":"x"}}`, "choices", false, false},
		{`{"choices":[{}],"error":null}`, "choices", false, true},
		{`{"choices":{"0":{}}}`, "choices", false, false},
		{`[{"choices":[{}]}]`, "choices", false, false},
		{`{"type":"message","content":[]}`, "content", true, true},
		{`{"type":"error","error":{"type":"overloaded_error"}}`, "content", true, false},
		{`{"data":[{"embedding":[0.1]}]}`, "data", false, true},
		{`{"data":[]}`, "data", false, false},
		{`{"input_tokens":12}`, "input_tokens", false, true},
		{`{"input_tokens":"12"}`, "input_tokens", false, false},
		{`{}`, "input_tokens", false, false},
	}
	for _, c := range cases {
		err := dialect.CheckAnswer([]byte(c.body), c.answer, c.emptyOK)
		if c.ok != (err == nil) {
			t.Errorf("CheckAnswer(%s, %q) = %v, want ok=%v", c.body, c.answer, err, c.ok)
		}
		if fe, isFE := err.(*failure.Error); err != nil && (!isFE || fe.Class != failure.UpstreamError) {
			t.Errorf("CheckAnswer(%s) = %v, want an upstream_error", c.body, err)
		}
	}
}
