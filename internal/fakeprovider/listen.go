package fakeprovider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// shutdownGrace bounds how long Serve waits for answers in flight once its context ends; hangs
// and delays end at once because every request context derives from Serve's context.
const shutdownGrace = 5 * time.Second

// ListenAndServe runs a provider named "fake-<dialect>" of dialect d on addr (host:port; port 0
// picks a free one) until ctx ends, for `switchyard fake-provider`. Once listening it logs
// "listening on HOST:PORT" through logf (nil logs nothing). It returns nil after a shutdown caused
// by ctx, or the listen or serve error. d must be catalog.OpenAI or catalog.Anthropic.
func ListenAndServe(ctx context.Context, addr string, d catalog.Dialect, logf func(string, ...any)) error {
	if d != catalog.OpenAI && d != catalog.Anthropic {
		return fmt.Errorf("fakeprovider: unknown dialect %q (want %q or %q)", d, catalog.OpenAI, catalog.Anthropic)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fakeprovider: %w", err)
	}
	if logf != nil {
		logf("listening on %s", ln.Addr())
	}
	return Serve(ctx, ln, New("fake-"+string(d), d))
}

// Serve serves p on ln until ctx ends, then shuts down: every request context derives from ctx,
// so hangs and delays end at once, and answers still being written get up to 5 s. It closes ln
// and returns nil after a shutdown caused by ctx, or the error that stopped serving. It is what
// `switchyard demo` uses to run its in-process providers on loopback listeners.
func Serve(ctx context.Context, ln net.Listener, p *Provider) error {
	return serveHandler(ctx, ln, p)
}

// serveHandler is Serve for any handler (a platform emulator in front of a Provider).
func serveHandler(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }() // owned here: ends when srv shuts down, awaited below
	select {
	case err := <-errc:
		return fmt.Errorf("fakeprovider: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close() // the grace expired: drop what is left; Close's error adds nothing
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("fakeprovider: %w", err)
	}
	return nil
}
