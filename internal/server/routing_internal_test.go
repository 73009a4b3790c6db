package server

import (
	"encoding/json"
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
		r := gjson.Parse(body)
		convo := r.Get("messages")
		if !convo.Exists() {
			convo = r.Get("input")
		}
		sys := r.Get("system")
		if !sys.Exists() {
			sys = r.Get("instructions")
		}
		return sessionKey(r.Get("prompt_cache_key"), sys, convo)
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
	if n := estimateTokens(gjson.Result{}, r.Get("messages"), gjson.Result{}, gjson.Result{}); n < 5000 || n > 5100 {
		t.Errorf("20,000 bytes of text estimated at %d tokens, want about 5,000", n)
	}
	img := strings.Repeat("A", 4<<20)
	body = `{"messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + img + `"}}]}]}`
	r = gjson.Parse(body)
	if n := estimateTokens(gjson.Result{}, r.Get("messages"), gjson.Result{}, gjson.Result{}); n > 2*mediaTokens {
		t.Errorf("a 4 MiB base64 image estimated at %d tokens, want about %d", n, mediaTokens)
	}
}
