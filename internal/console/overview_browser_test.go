package console_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// fmtUSD is the console's fmtUSD: six decimals, up to four trailing zeros dropped.
func fmtUSD(v float64) string {
	s := strconv.FormatFloat(v, 'f', 6, 64)
	for i := 0; i < 4 && strings.HasSuffix(s, "0"); i++ {
		s = s[:len(s)-1]
	}
	return "$" + s
}

// TestConsoleOverviewInBrowser (issue 23): after real traffic through the official OpenAI SDK
// (successes, a failover, a stream, a request the provider refuses), the console opens on the
// overview; at 1280 and 420 px its totals equal what the call log adds up to, its four charts
// are drawn from that traffic, its top keys show the key's name; the Logs page shows key names,
// the account, status and class on screen at 420 px, finds a request by its id and shows its
// cost breakdown; the page reports no error.
func TestConsoleOverviewInBrowser(t *testing.T) {
	bctx := startBrowser(t)
	g := startConsoleGateway(t, consoleYAML)
	shots := screenshots(t)
	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	events := new(pageEvents)
	if err := chromedp.Listen(tab, events.listen); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tab, stepTimeout)
		defer cancel()
		if err := chromedp.Do(ctx, steps...); err != nil {
			body, _ := chromedp.Run(tab, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("browser: %v\npage text:\n%s", err, body)
		}
	}
	js := func(t *testing.T, expr string) string {
		t.Helper()
		return get(t, tab, chromedp.Evaluate[string](expr))
	}
	shot := func(t *testing.T, name string) {
		t.Helper()
		png := get(t, tab, chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	noErrors := func(t *testing.T) {
		t.Helper()
		if errs := events.take(); len(errs) > 0 {
			t.Errorf("the page reported errors:\n%s", strings.Join(errs, "\n"))
		}
	}

	// Traffic: key "ov-key" of account Acme.
	var acct, key idOnly
	g.admin(t, "POST", "/admin/v1/accounts", map[string]any{"name": "Acme"}, &acct)
	g.admin(t, "POST", "/admin/v1/keys", map[string]any{"account_id": acct.ID, "name": "ov-key"}, &key)
	var ids []string
	for range 3 {
		id, err := g.chat(key.Secret)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	g.Fakes["oa-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 500}) // fails over
	id, err := g.chat(key.Secret)
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, id)
	g.Fakes["oa-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 400}) // refused: no failover
	refused, err := g.chat(key.Secret)
	if err == nil {
		t.Fatal("the refused request succeeded")
	}
	ids = append(ids, refused)
	c := openai.NewClient(option.WithBaseURL(g.URL+"/v1/"), option.WithAPIKey(key.Secret), option.WithMaxRetries(0))
	var raw *http.Response
	st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Stream")}}, option.WithResponseInto(&raw))
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, raw.Header.Get("X-Request-Id"))
	// Two requests under one caller request id (the caller's x-request-id), and one with a
	// malformed caller id, which is dropped.
	var callerIDs []string
	for _, hdr := range []string{"ov-caller-1", "ov-caller-1", "bad caller id"} {
		if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}},
			option.WithHeader("X-Request-Id", hdr), option.WithResponseInto(&raw)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, raw.Header.Get("X-Request-Id"))
		callerIDs = append(callerIDs, raw.Header.Get("X-Request-Id"))
	}

	// What the call log adds up to.
	var log struct {
		Data []struct {
			RequestID string `json:"request_id"`
			ErrorCode string `json:"error_code"`
			Attempts  []struct {
				CostUSD float64 `json:"cost_usd"`
				Tokens  struct {
					Input, Cached, CacheWrite, Output int64
				} `json:"tokens"`
			} `json:"attempts"`
		} `json:"data"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.admin(t, "GET", "/admin/v1/requests?limit=100", nil, &log)
		if len(log.Data) == len(ids) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(log.Data) != len(ids) {
		t.Fatalf("call log has %d requests, sent %d", len(log.Data), len(ids))
	}
	var failed, in, out int64
	var cost float64
	for _, r := range log.Data {
		if r.ErrorCode != "" {
			failed++
		}
		for _, a := range r.Attempts {
			cost += a.CostUSD
			in += a.Tokens.Input + a.Tokens.Cached + a.Tokens.CacheWrite
			out += a.Tokens.Output
		}
	}
	if failed != 1 || cost == 0 || in == 0 {
		t.Fatalf("call log: %d failed, cost %v, %d tokens in", failed, cost, in)
	}
	wantRequests := strconv.Itoa(len(ids))
	wantFailed := fmt.Sprintf("%d (%.1f%%)", failed, 100*float64(failed)/float64(len(ids)))
	wantTokens := fmt.Sprintf("%d / %d", in, out)

	run(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(g.URL+"/console"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), adminToken), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS("#total-requests .big")))

	for _, width := range []int64{1280, 420} {
		t.Run(fmt.Sprintf("overview at %d px", width), func(t *testing.T) {
			run(t, chromedp.EmulateViewport(width, 900), chromedp.Navigate(g.URL+"/console/overview?window=1h"),
				chromedp.WaitVisible(chromedp.CSS("#total-requests .big")))
			for sel, want := range map[string]string{"#total-requests .big": wantRequests, "#total-errors .big": wantFailed,
				"#total-cost .big": fmtUSD(cost), "#total-tokens .big": wantTokens} {
				if got := js(t, `document.querySelector('`+sel+`').textContent`); got != want {
					t.Errorf("%s = %q; the call log's is %q", sel, got, want)
				}
			}
			// The charts are drawn from the traffic: the bars of the requests chart add up to the
			// call log's requests, the failure's class has its bar, spend and tokens have bars,
			// latency and TTFT have points.
			sum := js(t, `String([...document.querySelectorAll('#chart-requests rect.bar title')].reduce((s, e) => s + Number(e.textContent.split(': ').pop()), 0))`)
			if sum != wantRequests {
				t.Errorf("the requests chart's bars add up to %s, the call log has %s", sum, wantRequests)
			}
			for sel, min := range map[string]int{"#chart-requests rect.bar.c-err0": 1, "#chart-spend rect.bar": 1, "#chart-tokens rect.bar": 2,
				"#chart-latency circle.c-p50": 1, "#chart-latency circle.c-t50": 1} {
				if n, _ := strconv.Atoi(js(t, `String(document.querySelectorAll('`+sel+`').length)`)); n < min {
					t.Errorf("%s: %d drawn, want at least %d", sel, n, min)
				}
			}
			if got := js(t, `document.querySelector('#top-keys tbody tr td').textContent`); got != "ov-key" {
				t.Errorf("top key shown as %q, want its name ov-key", got)
			}
			if got := js(t, `document.querySelector('#top-accounts tbody tr td').textContent`); got != acct.ID {
				t.Errorf("top account %q, want %s", got, acct.ID)
			}
			if get(t, tab, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)) {
				t.Errorf("the overview scrolls sideways at %d px", width)
			}
			shot(t, fmt.Sprintf("overview-%d", width))
			noErrors(t)
		})
		t.Run(fmt.Sprintf("logs at %d px", width), func(t *testing.T) {
			run(t, chromedp.EmulateViewport(width, 900), chromedp.Navigate(g.URL+"/console/logs"),
				chromedp.WaitVisible(chromedp.CSS("#logs table")))
			row := `document.querySelector('#logs tbody tr')`
			// Status and class on screen; the caller's request id (dropped: malformed); key by
			// name; the account.
			for i, want := range map[int]string{1: "200", 2: "ok", 3: callerIDs[2], 4: "—", 5: "ov-key", 6: acct.ID} {
				if got := js(t, row+`.children[`+strconv.Itoa(i)+`].textContent`); got != want {
					t.Errorf("newest row, column %d = %q, want %q", i, got, want)
				}
			}
			for _, i := range []int{1, 2} {
				if !get(t, tab, chromedp.Evaluate[bool](row+`.children[`+strconv.Itoa(i)+`].getBoundingClientRect().right <= window.innerWidth`)) {
					t.Errorf("at %d px column %d (status, class) is off screen", width, i)
				}
			}
			shot(t, fmt.Sprintf("logs-%d", width))
			noErrors(t)
		})
	}

	t.Run("find a request by id, its cost breakdown", func(t *testing.T) {
		run(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(g.URL+"/console/logs"), chromedp.WaitVisible(chromedp.ID("f-request")),
			chromedp.SendKeys(chromedp.ID("f-request"), ids[3]), chromedp.Submit(chromedp.ID("f-request")),
			chromedp.WaitVisible(chromedp.ID("cost-summary")))
		if loc := get(t, tab, chromedp.Location()); !strings.Contains(loc, "request="+ids[3]) {
			t.Errorf("search went to %s", loc)
		}
		if s := js(t, `document.getElementById('cost-summary').textContent`); !strings.HasPrefix(s, "Reserved $") || !strings.Contains(s, "settled $") {
			t.Errorf("cost summary %q", s)
		}
		// Two attempts (the failover): each with its reserve, price and settle.
		if n := js(t, `String(document.querySelectorAll('#cost-summary + .scroll tbody tr').length)`); n != "2" {
			t.Errorf("cost rows %s, want 2", n)
		}
		if p := js(t, `document.querySelector('#cost-summary + .scroll tbody tr:last-child').children[3].textContent`); p != "$0.2 / $0.8" {
			t.Errorf("served attempt's price %q, want the backup's $0.2 / $0.8", p)
		}
		if k := js(t, `[...document.querySelectorAll('#request-summary dt')].find(e => e.textContent === 'Key').nextElementSibling.textContent`); !strings.HasPrefix(k, "ov-key") {
			t.Errorf("detail key %q, want its name", k)
		}
		shot(t, "request-cost")
		noErrors(t)
	})

	t.Run("find requests by the caller's request id", func(t *testing.T) {
		run(t, chromedp.EmulateViewport(420, 900), chromedp.Navigate(g.URL+"/console/logs"), chromedp.WaitVisible(chromedp.ID("f-request")),
			// The page's first table drawn: its script is running, and takes the submit.
			chromedp.WaitVisible(chromedp.CSS("#logs table")),
			chromedp.SendKeys(chromedp.ID("f-request"), "ov-caller-1"), chromedp.Submit(chromedp.ID("f-request")),
			// The search's rows, not the table drawn before its answer came (a slow -race run):
			// the address carries the search, and every row is one of the caller's.
			// The submit navigates: a poll cut by the navigation is polled again on the new page.
			chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				deadline := time.Now().Add(10 * time.Second)
				for {
					_, err := chromedp.Poll[bool](`(() => { const rows = [...document.querySelectorAll('#logs tbody tr')];
					return location.search.includes('request_id=ov-caller-1') && rows.length >= 2 && rows.every(r => r.textContent.includes('ov-caller-1')); })()`,
						chromedp.WithPollingTimeout(time.Until(deadline)))(ctx, tg)
					if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
						return err
					}
					time.Sleep(50 * time.Millisecond)
				}
			}))
		if loc := get(t, tab, chromedp.Location()); !strings.Contains(loc, "request_id=ov-caller-1") {
			t.Errorf("search went to %s", loc)
		}
		// Both of the caller's requests, newest first, each with its id and the caller's.
		got := js(t, `[...document.querySelectorAll('#logs tbody tr')].map(r => r.children[3].textContent + ' ' + r.children[4].textContent).join(', ')`)
		if want := callerIDs[1] + " ov-caller-1, " + callerIDs[0] + " ov-caller-1"; got != want {
			t.Errorf("rows found by the caller's id: %q, want %q", got, want)
		}
		for _, i := range []int{1, 2} {
			if !get(t, tab, chromedp.Evaluate[bool](`document.querySelector('#logs tbody tr').children[`+strconv.Itoa(i)+`].getBoundingClientRect().right <= window.innerWidth`)) {
				t.Errorf("at 420 px column %d (status, class) of the search's rows is off screen", i)
			}
		}
		shot(t, "logs-caller-id-420")
		noErrors(t)
		// One match (the caller's id of one request) opens its detail, which shows the caller's id.
		run(t, chromedp.Navigate(g.URL+"/console/logs?request_id="+callerIDs[0]), chromedp.WaitVisible(chromedp.ID("request-summary")))
		if k := js(t, `[...document.querySelectorAll('#request-summary dt')].find(e => e.textContent === 'Caller request id').nextElementSibling.textContent`); k != "ov-caller-1" {
			t.Errorf("detail caller request id %q, want ov-caller-1", k)
		}
		noErrors(t)
	})
}
