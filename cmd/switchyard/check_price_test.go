package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check warns about a route that can serve a metered account (a budget here) and has no price
// from any source; a route priced in the file, one priced by the built-in catalog, and every
// route of a file without metered accounts get no warning. With pricing.catalog false, the
// catalog-priced route is unpriced and warned about too.
func TestCheckWarnsUnpricedMeteredRoute(t *testing.T) {
	const base = `auth: {required: true}
models: [{id: m}, {id: gpt-4o-mini}]
deployments:
  - {name: local, provider: my-vllm, dialect: openai, base_url: "http://127.0.0.1:1/v1", routes: [{model: m}]}
  - {name: priced, provider: my-vllm, dialect: openai, base_url: "http://127.0.0.1:1/v1", routes: [{model: m, price: {input: 1, output: 2}}]}
  - {name: oa, provider: openai, dialect: openai, base_url: "http://127.0.0.1:1/v1", routes: [{model: gpt-4o-mini}]}
keys:
  - {name: k, secret: "k-0123456789", LIMITS}
`
	for _, tc := range []struct {
		name, limits, extra string
		warned, quiet       []string
	}{
		{"budget", "limits: {budget_usd: 5}", "", []string{"deployment local route m"}, []string{"deployment priced", "deployment oa"}},
		{"no metered account", "limits: {rpm: 5}", "", nil, []string{"deployment local", "deployment priced", "deployment oa"}},
		{"catalog off", "limits: {budget_usd: 5}", "pricing: {catalog: false}\n", []string{"deployment local route m", "deployment oa route gpt-4o-mini"}, []string{"deployment priced"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := strings.Replace(base, "LIMITS", tc.limits, 1) + tc.extra
			if err := os.WriteFile(filepath.Join(dir, "switchyard.yaml"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI(t, dir, "check")
			if code != 0 {
				t.Fatalf("check: %d %q %q", code, out, errOut)
			}
			for _, w := range tc.warned {
				if !strings.Contains(out, "warning: "+w) || !strings.Contains(out, "has no price") {
					t.Errorf("check does not warn about %q:\n%s", w, out)
				}
			}
			for _, q := range tc.quiet {
				if strings.Contains(out, "warning: "+q) {
					t.Errorf("check warns about %q:\n%s", q, out)
				}
			}
		})
	}
}
