package rebalance

import (
	"testing"

	"go.uber.org/goleak"
)

// The planner starts no goroutines; the check keeps it that way.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
