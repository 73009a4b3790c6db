package dialect_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// TestCheckAnswer: a provider 200 body passes through only when it answers something (nothing
// ends in an empty 200); everything else is an upstream_error, which fails over. Checked on
// ScanAnswer, the gateway's check, and on the former member check it replaced (the reference
// of TestScanAnswer).
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
		_, scanErr := dialect.ScanAnswer([]byte(c.body), c.answer, c.emptyOK)
		for name, err := range map[string]error{"ScanAnswer": scanErr, "checkAnswer": checkAnswer([]byte(c.body), c.answer, c.emptyOK)} {
			if c.ok != (err == nil) {
				t.Errorf("%s(%s, %q) = %v, want ok=%v", name, c.body, c.answer, err, c.ok)
			}
			if fe, isFE := err.(*failure.Error); err != nil && (!isFE || fe.Class != failure.UpstreamError) {
				t.Errorf("%s(%s) = %v, want an upstream_error", name, c.body, err)
			}
		}
	}
}

// checkAnswer is the member check ScanAnswer replaced, kept as the reference: on a valid JSON
// body, an object with no non-null top-level error whose member answer is an array (non-empty
// unless emptyOK) or, for input_tokens, a number; the last member answer counts.
func checkAnswer(body []byte, answer string, emptyOK bool) error {
	root := gjson.Parse(dialect.View(body))
	if !root.IsObject() {
		return &failure.Error{Class: failure.UpstreamError, Msg: "the provider sent an unreadable response"}
	}
	var found gjson.Result
	isError := false
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "error":
			isError = v.Type != gjson.Null
		case answer:
			found = v
		}
		return !isError
	})
	ok := false
	switch {
	case isError:
	case answer == "input_tokens":
		ok = found.Type == gjson.Number
	case found.IsArray():
		ok = emptyOK || found.Get("#").Int() > 0
	}
	if ok {
		return nil
	}
	msg := "the provider answered 200 without `" + answer + "`"
	if isError {
		msg = "the provider answered 200 with an error object"
	}
	return &failure.Error{Class: failure.UpstreamError, Msg: msg}
}

// oldCheck is the chain ScanAnswer replaces (TooDeep, gjson validation, checkAnswer, then path
// lookups of model and usage): the reference the one-pass scan must agree with on every input.
func oldCheck(body []byte, answer string, emptyOK bool) (model, usage gjson.Result, msg string) {
	if dialect.TooDeep(body) {
		return model, usage, dialect.ResponseTooDeep().Msg
	}
	if !gjson.ValidBytes(body) {
		return model, usage, "the provider sent an unreadable response"
	}
	if err := checkAnswer(body, answer, emptyOK); err != nil {
		return model, usage, err.(*failure.Error).Msg
	}
	return dialect.Get(body, "model"), dialect.Get(body, "usage"), ""
}

// checkScanAnswer fails t when ScanAnswer disagrees with the former chain or with
// encoding/json's validator, or returns members other than the path lookups'.
func checkScanAnswer(t *testing.T, body []byte, answer string, emptyOK bool) {
	t.Helper()
	a, err := dialect.ScanAnswer(body, answer, emptyOK)
	model, usage, msg := oldCheck(body, answer, emptyOK)
	got := ""
	if err != nil {
		fe, ok := err.(*failure.Error)
		if !ok || fe.Class != failure.UpstreamError {
			t.Fatalf("ScanAnswer(%q) = %v, want an upstream_error", body, err)
		}
		got = fe.Msg
	}
	if got != msg {
		t.Fatalf("ScanAnswer(%q, %q): %q, the former checks: %q", body, answer, got, msg)
	}
	if valid := json.Valid(body) && !dialect.TooDeep(body); err == nil && !valid {
		t.Fatalf("ScanAnswer(%q) accepted what encoding/json refuses", body)
	} else if valid && err != nil && got == "the provider sent an unreadable response" && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{")) {
		t.Fatalf("ScanAnswer(%q) called unreadable an object encoding/json accepts", body)
	}
	if err != nil {
		return
	}
	for _, c := range []struct {
		name      string
		got, want gjson.Result
	}{{"model", a.Model, model}, {"usage", a.Usage, usage}} {
		if c.got.Raw != c.want.Raw || c.got.Index != c.want.Index || c.got.Type != c.want.Type || c.got.Str != c.want.Str {
			t.Fatalf("ScanAnswer(%q).%s = %+v, the path lookup %+v", body, c.name, c.got, c.want)
		}
	}
}

// TestScanAnswer: the one pass over a provider's 200 body (depth, validity, the answer member,
// model and usage) gives what TooDeep, gjson's validator, checkAnswer and two path lookups gave,
// on valid answers, on every class of invalid JSON and at the depth limit.
func TestScanAnswer(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	bodies := []string{
		`{"id":"x","model":"m-2024","choices":[{"index":0,"message":{"content":"hi \"q\" \u00e9\n"}}],"usage":{"prompt_tokens":3}}`,
		` {"model" : "m" , "choices" : [ 1 ] } `,
		`{"choices":[{}],"model":"a","model":"b","usage":{"x":1},"usage":null}`,
		`{"mod\u0065l":"esc","choices":[0]}`,
		`{"model":12,"choices":[0]}`,
		`{"choices":[0],"n":[-0,0.5,1e3,1E-3,-12.5e+7,true,false,null,"",{}]}`,
		`{"choices":[0],"x":` + deep(127) + `}`,
		`{"choices":[0],"x":` + deep(128) + `}`,
		`{"choices":[0],"x":` + strings.Repeat("[", 200),
		`{"choices":[0],"x":01}`, `{"choices":[0],"x":1.}`, `{"choices":[0],"x":-}`, `{"choices":[0],"x":1e}`,
		`{"choices":[0],"x":.5}`, `{"choices":[0],"x":+1}`, `{"choices":[0],"x":tru}`, `{"choices":[0],"x":nul}`,
		`{"choices":[0],"x":"\x"}`, `{"choices":[0],"x":"\u12G4"}`, "{\"choices\":[0],\"x\":\"a\x01\"}",
		`{"choices":[0],"x":"unterminated}`, `{"choices":[0],}`, `{"choices":[0,]}`, `{"choices" [0]}`,
		`{"choices":[0]} x`, `{"choices":[0]}{}`, `{choices:[0]}`, `{"choices":[0]`, `{`, ``, ` `, `[]`,
		`"str"`, `12`, `null`, `[{"choices":[0]}]`, `{"choices":[]}`, `{"choices":[ ]}`, `{}`,
		`{"choices":[0],"error":{"message":"x"}}`, `{"choices":[0],"error":null}`, `{"error":null,"error":1,"choices":[0]}`,
		`{"input_tokens":12}`, `{"input_tokens":"12"}`, `{"content":[]}`, `{"data":[{"b64_json":"x"}]}`,
		"{\"choices\":[0],\"x\":\"\xff\xfe\"}",
	}
	for _, b := range bodies {
		for _, ans := range []struct {
			name    string
			emptyOK bool
		}{{"choices", false}, {"content", true}, {"data", false}, {"input_tokens", false}} {
			checkScanAnswer(t, []byte(b), ans.name, ans.emptyOK)
		}
	}
	// The limit itself: 128 levels pass, 129 are refused as too deep, naming the limit.
	if _, err := dialect.ScanAnswer([]byte(`{"choices":[0],"x":`+deep(127)+`}`), "choices", false); err != nil {
		t.Fatalf("128 levels: %v", err)
	}
	if _, err := dialect.ScanAnswer([]byte(`{"choices":[0],"x":`+deep(128)+`}`), "choices", false); err == nil || !strings.Contains(err.Error(), dialect.DepthLimit) {
		t.Fatalf("129 levels: %v, want the depth limit", err)
	}
	// A hostile body of 1 MiB of '[' ends in a too-deep error, not a stack overflow.
	if _, err := dialect.ScanAnswer([]byte(`{"a":`+strings.Repeat("[", 1<<20)), "choices", false); err == nil {
		t.Fatal("1 MiB of [ accepted")
	}
}

// TestScanAnswerAllocs: the scan of a valid answer allocates nothing.
func TestScanAnswerAllocs(t *testing.T) {
	body := []byte(`{"id":"x","model":"m-2024","choices":[{"index":0,"message":{"content":"hi"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = dialect.ScanAnswer(body, "choices", false) }); n != 0 {
		t.Fatalf("ScanAnswer allocates %v times per call", n)
	}
}

// FuzzScanAnswer: on any bytes, ScanAnswer agrees with the former checks and encoding/json's
// validator, and finds the members the path lookups find.
func FuzzScanAnswer(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":1}}`,
		`{"type":"message","model":"c","content":[],"usage":{"input_tokens":1,"output_tokens_details":{"thinking_tokens":2}}}`,
		`{"error":{"message":"x"}}`, `{"data":[{"embedding":[0.1,-2e5]}]}`, `{"input_tokens":5}`, `[1,"\u00e9"]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<16 {
			return
		}
		checkScanAnswer(t, body, "choices", false)
		checkScanAnswer(t, body, "content", true)
		checkScanAnswer(t, body, "input_tokens", false)
	})
}
