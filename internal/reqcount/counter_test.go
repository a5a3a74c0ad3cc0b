package reqcount

import (
	"maps"
	"sync"
	"testing"
)

func TestCounter(t *testing.T) {
	var c Counter
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				c.Add("a")
			}
			c.Add("b")
		})
	}
	wg.Wait()
	if got, want := c.Counts(), map[string]int64{"a": 400, "b": 4}; !maps.Equal(got, want) || c.Total() != 404 {
		t.Fatalf("counts %v total %d, want %v total 404", got, c.Total(), want)
	}
	c.Counts()["a"] = 0 // a copy
	if c.Counts()["a"] != 400 {
		t.Fatal("Counts returned the counter's own map")
	}
	c.Reset()
	if c.Total() != 0 || len(c.Counts()) != 0 {
		t.Fatalf("after Reset: %d, %v", c.Total(), c.Counts())
	}
}
