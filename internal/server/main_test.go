package server_test

import (
	"net/http"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: every upstream call, stream
// pump, hang and audit writer must end with its request or its gateway. The official SDKs use
// http.DefaultClient, so its idle connections are closed before the check instead of ignoring
// their goroutines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(idleClosingM{m})
}

// idleClosingM runs the tests, then closes the default transport's idle connections.
type idleClosingM struct{ m *testing.M }

func (c idleClosingM) Run() int {
	code := c.m.Run()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	return code
}
