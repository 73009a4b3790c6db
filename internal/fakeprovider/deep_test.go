package fakeprovider

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// A request body nested 12 million levels deep (24 MB) is answered 400 like any body that is
// not JSON, and the provider keeps serving: gjson's validator, which recurses once per level,
// used to overflow the stack and kill the process (`switchyard serve` runs fakes in-process).
func TestDeepBodyRejected(t *testing.T) {
	p := New("fake", catalog.OpenAI)
	ts := httptest.NewServer(p)
	defer ts.Close()
	deep := `{"model":"m","messages":` + strings.Repeat("[", 12_000_000) + strings.Repeat("]", 12_000_000) + `}`
	for i, body := range []string{deep, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`} {
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := []int{400, 200}[i]; resp.StatusCode != want {
			t.Fatalf("request %d: status %d, want %d", i, resp.StatusCode, want)
		}
	}
}
