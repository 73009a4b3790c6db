package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestStripConsumed: the members the gateway consumes (provider, models, extra) never reach a
// provider (R-ORDER-6, R-FAIL-8); every other byte is the caller's.
func TestStripConsumed(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"model":"m","messages":[]}`, `{"model":"m","messages":[]}`},
		{`{"provider":{"only":["a"]},"model":"m"}`, `{"model":"m"}`},
		{`{"model":"m", "provider":{"only":["a"]}, "n":1}`, `{"model":"m", "n":1}`},
		{`{"model":"m","provider":{},"models":["x"]}`, `{"model":"m"}`},
		{`{ "provider":1, "extra":{"fallbacks":["x"]} , "model":"m" }`, `{ "model":"m" }`},
		{`{"provider":1}`, `{}`},
		{`{"a":{"provider":1},"models":[],"b":"provider"}`, `{"a":{"provider":1},"b":"provider"}`},
	} {
		got := string(stripConsumed(nil, []byte(tc.in)))
		if got != tc.want {
			t.Errorf("stripConsumed(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("stripConsumed(%s) = %s: not JSON", tc.in, got)
		}
	}
}

// TestSessionKey: R-ORDER-5: prompt_cache_key first, else the stable start of the
// conversation (same key on every turn, different for another conversation), else "".
func TestSessionKey(t *testing.T) {
	key := func(body string) string {
		pck, sys, convo, _, _ := hintMembers(body)
		k, _ := convoHints(pck, sys, convo, gjson.Result{}, gjson.Result{})
		return k
	}
	turn1 := `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`
	turn2 := `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"more"}]}`
	other := `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"bye"}]}`
	if a, b := key(turn1), key(turn2); a == "" || a != b {
		t.Errorf("turns of one conversation: %q then %q, want one non-empty key", a, b)
	}
	if key(turn1) == key(other) {
		t.Errorf("two conversations share a key")
	}
	pck := `{"prompt_cache_key":"conv-42","messages":[{"role":"user","content":"x"}]}`
	if k := key(pck); !strings.HasPrefix(k, "k:") || strings.Contains(k, "conv-42") {
		t.Errorf("prompt_cache_key gives %q, want a k: hash that does not echo the key", k)
	}
	an := `{"system":"s","messages":[{"role":"user","content":"hi"}]}`
	if k := key(an); !strings.HasPrefix(k, "c:") || len(k) != 18 {
		t.Errorf("anthropic key %q", k)
	}
	if k := key(`{"input":"hello"}`); k == "" {
		t.Errorf("responses string input gives no key")
	}
	if k := key(`{"messages":[]}`); k != "" {
		t.Errorf("empty conversation gives %q, want \"\" (random)", k)
	}
}

// TestEstimateTokens: the context-fit estimate (R-ADMIT-4) is bytes/4 of the text and a flat
// cost per media part, so a base64 image does not count as megabytes of tokens.
func TestEstimateTokens(t *testing.T) {
	text := strings.Repeat("word ", 4000) // 20,000 bytes
	body := `{"messages":[{"role":"user","content":"` + text + `"}]}`
	r := gjson.Parse(body)
	if n := tokensOf(r.Get("messages")); n < 5000 || n > 5100 {
		t.Errorf("20,000 bytes of text estimated at %d tokens, want about 5,000", n)
	}
	img := strings.Repeat("A", 4<<20)
	body = `{"messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + img + `"}}]}]}`
	r = gjson.Parse(body)
	if n := tokensOf(r.Get("messages")); n > 2*mediaTokens {
		t.Errorf("a 4 MiB base64 image estimated at %d tokens, want about %d", n, mediaTokens)
	}
}

func tokensOf(convo gjson.Result) int {
	_, n := convoHints(gjson.Result{}, gjson.Result{}, convo, gjson.Result{}, gjson.Result{})
	return n
}

// sessionKeyRef and estimateTokensRef are convoHints's two hints as they were first written,
// one lookup per member and one pass each: the reference convoHints is held to.
func sessionKeyRef(pck, system, convo gjson.Result) string {
	if pck.Type == gjson.String && pck.Str != "" {
		return "k:" + hashHex(pck.Raw)
	}
	var h hash.Hash
	write := func(s string) {
		if h == nil {
			h = sha256.New()
		}
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	if system.Exists() && system.Type != gjson.Null {
		write(system.Raw)
	}
	switch {
	case convo.Type == gjson.String:
		write(convo.Raw)
	case convo.IsArray():
		convo.ForEach(func(_, m gjson.Result) bool {
			role := m.Get("role").Str
			switch role {
			case "system", "developer":
				write(m.Raw)
				return true
			case "user":
				write(m.Raw)
			}
			return role != "user"
		})
	}
	if h == nil {
		return ""
	}
	var sum [sha256.Size]byte
	return "c:" + hex.EncodeToString(h.Sum(sum[:0])[:8])
}

func estimateTokensRef(system, convo, tools, functions gjson.Result) int {
	return (len(system.Raw) + len(tools.Raw) + len(functions.Raw) + convoBytesRef(convo, 0)) / 4
}

func convoBytesRef(v gjson.Result, depth int) int {
	switch {
	case v.IsArray() && depth < 4:
		n := 2
		v.ForEach(func(_, e gjson.Result) bool {
			n += convoBytesRef(e, depth+1) + 1
			return true
		})
		return n
	case v.IsObject() && depth < 4:
		switch v.Get("type").Str {
		case "image_url", "image", "input_image", "input_audio", "file", "input_file", "document":
			return mediaTokens * 4
		}
		if c := v.Get("content"); c.IsArray() {
			return len(v.Raw) - len(c.Raw) + convoBytesRef(c, depth+1)
		}
	}
	return len(v.Raw)
}

// convoCorpus are bodies of every shape the conversation hints read: both dialects, the
// Responses input as a string, an array and an object, media at each depth, repeated and
// escaped member names, prompt_cache_key, system and instructions, non-object messages.
var convoCorpus = []string{
	`{"messages":[{"role":"user","content":"Say hello in one short sentence."}]}`,
	`{"messages":[{"role":"system","content":"be brief"},{"role":"developer","content":"d"},{"role":"assistant","content":"a"},{"role":"user","content":"hi"},{"role":"user","content":"more"}]}`,
	`{"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"what"},{"type":"image","source":{"data":"AAAA"}}]}],"tools":[{"name":"t"}]}`,
	`{"instructions":"be kind","input":"hello"}`,
	`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"},{"type":"input_text","text":"y"}]},{"type":"function_call_output","output":"z"}]}`,
	`{"input":{"role":"user","content":[{"type":"input_file","file_id":"f"}]}}`,
	`{"prompt_cache_key":"conv-42","messages":[{"role":"user","content":"x"}]}`,
	`{"prompt_cache_key":"","messages":[{"role":"user","content":"x"}]}`,
	`{"prompt_cache_key":7,"system":null,"messages":[{"role":"user","content":"x"}]}`,
	`{"messages":[{"role":"user","role":"system","content":"dup"},{"type":"image_url","type":"text","content":[1,2]}]}`,
	`{"messages":[{"r\u006fle":"user","content":"escaped"},{"role":"user","c\u006Entent":[{"type":"document"}]}]}`,
	`{"messages":[1,"two",null,[{"type":"image"}],{"role":"tool","content":[{"type":"tool_result","content":[{"type":"image","source":{}},{"type":"text","text":"deep","content":[{"type":"image"}]}]}]}]}`,
	`{"messages":[],"functions":[{"name":"f"}]}`,
	`{"messages":{"role":"user","content":"not an array"}}`,
	`{"messages":"text"}`,
	`{}`,
}

// hintMembers are the members of body convoHints reads, as readHints picks them: the
// conversation (messages, else input) and the system prompt (system, else instructions).
func hintMembers(body string) (pck, sys, convo, tools, fns gjson.Result) {
	r := gjson.Parse(body)
	if convo = r.Get("messages"); !convo.Exists() {
		convo = r.Get("input")
	}
	if sys = r.Get("system"); !sys.Exists() {
		sys = r.Get("instructions")
	}
	return r.Get("prompt_cache_key"), sys, convo, r.Get("tools"), r.Get("functions")
}

// checkConvoHints holds convoHints to the references on one body.
func checkConvoHints(t *testing.T, body string) {
	pck, sys, convo, tools, fns := hintMembers(body)
	key, n := convoHints(pck, sys, convo, tools, fns)
	if want := sessionKeyRef(pck, sys, convo); key != want {
		t.Errorf("%s: session key %q, want %q", body, key, want)
	}
	if want := estimateTokensRef(sys, convo, tools, fns); n != want {
		t.Errorf("%s: estimate %d, want %d", body, n, want)
	}
}

// TestConvoHints: the one-pass walk gives the session key and estimate of the references.
func TestConvoHints(t *testing.T) {
	for _, body := range convoCorpus {
		checkConvoHints(t, body)
	}
	long := `{"system":"` + strings.Repeat("s", 3000) + `","messages":[{"role":"user","content":"` + strings.Repeat("u", 3000) + `"}]}`
	checkConvoHints(t, long) // past the stack buffer
}

func FuzzConvoHints(f *testing.F) {
	for _, body := range convoCorpus {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if !gjson.Valid(body) || len(body) > 1<<16 {
			return
		}
		checkConvoHints(t, body)
	})
}

// BenchmarkConvoHints: the hints of the load harness's chat body and of a 12-turn conversation.
func BenchmarkConvoHints(b *testing.B) {
	turns := `{"role":"system","content":"You are a helpful assistant."}`
	for i := range 6 {
		turns += fmt.Sprintf(`,{"role":"user","content":"question %d about the weather"},{"role":"assistant","content":"answer %d: sunny"}`, i, i)
	}
	for _, c := range []struct{ name, body string }{
		{"harness", convoCorpus[0]},
		{"12-turns", `{"model":"m","messages":[` + turns + `]}`},
	} {
		r := gjson.Parse(c.body)
		convo := r.Get("messages")
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				convoHints(gjson.Result{}, gjson.Result{}, convo, gjson.Result{}, gjson.Result{})
			}
		})
		b.Run(c.name+"/ref", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sessionKeyRef(gjson.Result{}, gjson.Result{}, convo)
				estimateTokensRef(gjson.Result{}, convo, gjson.Result{}, gjson.Result{})
			}
		})
	}
}
