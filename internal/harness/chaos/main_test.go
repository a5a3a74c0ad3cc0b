package chaos

import (
	"testing"

	"go.uber.org/goleak"
)

// Every proxy, process waiter and pool must be gone after the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
