package procfleet

import (
	"testing"

	"go.uber.org/goleak"
)

// Every process waiter and history follower must be gone after the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
