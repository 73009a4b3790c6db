package fakeprovider

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: hangs and delays must end
// with the request context.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
