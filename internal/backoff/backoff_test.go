package backoff

import (
	"testing"
	"time"
)

// TestBackoffDoublesToItsCapAndStartsOver: attempt n waits in [c/4, c),
// c = min(Max, Base·2ⁿ), and Reset starts from Base again.
func TestBackoffDoublesToItsCapAndStartsOver(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second, J: NewJitter(1)}
	for _, ceil := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		ceil *= time.Millisecond
		if d := b.Next(); d < ceil/4 || d >= ceil {
			t.Errorf("wait %v, want in [%v, %v)", d, ceil/4, ceil)
		}
	}
	b.Reset()
	if d := b.Next(); d >= 100*time.Millisecond {
		t.Errorf("after Reset: wait %v, want below the base 100ms", d)
	}
}
