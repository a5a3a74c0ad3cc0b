package freeporttest

import "testing"

// TestRigged: the first Times calls put Taken at index At; later calls
// do not; every call is counted.
func TestRigged(t *testing.T) {
	r := &Rigged{Taken: 1234, At: 1, Times: 2}
	for call := 1; call <= 3; call++ {
		ports, err := r.Pick(3)
		if err != nil {
			t.Fatal(err)
		}
		if rigged := ports[1] == r.Taken; rigged != (call <= r.Times) || len(ports) != 3 {
			t.Errorf("call %d returned %v; want port %d at index 1 in the first %d calls only", call, ports, r.Taken, r.Times)
		}
	}
	if r.Calls() != 3 {
		t.Errorf("Calls() = %d after 3 calls", r.Calls())
	}
}
