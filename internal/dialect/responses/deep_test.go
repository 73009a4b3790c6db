package responses_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/responses"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// A Responses body nested deeper than dialect.MaxDepth is refused invalid_request naming the
// limit by the pass-through parser and the decoder (12 million levels used to kill the process).
func TestDeepRequestRefused(t *testing.T) {
	const n = 12_000_000
	deep := []byte(`{"model":"m","input":"hi","metadata":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
	for name, parse := range map[string]func([]byte) error{
		"ParseRequest":  func(b []byte) error { _, err := responses.ParseRequest(b); return err },
		"DecodeRequest": func(b []byte) error { _, err := responses.DecodeRequest(b); return err },
	} {
		var fe *failure.Error
		if err := parse(deep); !errors.As(err, &fe) || fe.Class != failure.InvalidRequest || !strings.Contains(fe.Msg, dialect.DepthLimit) {
			t.Errorf("%s: %v, want invalid_request naming %q", name, err, dialect.DepthLimit)
		}
	}
}
