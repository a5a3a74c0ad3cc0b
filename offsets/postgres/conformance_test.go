package postgres_test

import (
	"testing"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/offsetstest"
)

// TestConformance runs the offsets suite against a real PostgreSQL, each
// case on a fresh table.
func TestConformance(t *testing.T) {
	offsetstest.Run(t, opener(database(t)))
}

// TestDurable: checkpoints and floors survive closing the store and opening
// it again on the same table.
func TestDurable(t *testing.T) {
	dsn := database(t)
	offsetstest.RunDurable(t, func(tb testing.TB) offsetstest.OpenFunc {
		table := "durable_" + randomHex(6)
		return func(tb testing.TB) offsets.Store { return openTable(tb, dsn, table) }
	})
}
