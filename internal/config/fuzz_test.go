package config

import "testing"

// FuzzParse: no input crashes the configuration parser, its syntax-line search included; a
// rejected input always names at least one problem.
func FuzzParse(f *testing.F) {
	f.Add(Starter())
	f.Add(defaultYAML)
	f.Add([]byte("server:\n  listen: 127.0.0.1:8080\n listen2: x\n"))
	f.Add([]byte("models:\n  - id: m\n    aliases: [a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		cfg, err := parse("f.yaml", data, func(string) (string, bool) { return "", false })
		if (cfg == nil) == (err == nil) {
			t.Fatalf("parse returned cfg %v and err %v", cfg != nil, err)
		}
	})
}
