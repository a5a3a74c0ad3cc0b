package fleetkeys

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestSealRoundTrip: a sealed value still reads as the JSON it was (with
// the seal beside its fields), an empty object stays valid, and any
// memory — empty, binary, with newlines of its own — comes back as it was
// with its seal; a memory without a seal line has none.
func TestSealRoundTrip(t *testing.T) {
	for _, v := range []string{`{"epoch":3,"shards":"0-1"}`, `{}`, ` {"a":1} `} {
		sealed := SealValue([]byte(v), 42)
		var m map[string]any
		if err := json.Unmarshal(sealed, &m); err != nil || ValueSeal(sealed) != 42 {
			t.Errorf("SealValue(%s) = %s: not JSON with seal 42 (%v)", v, sealed, err)
		}
	}
	for _, mem := range [][]byte{nil, []byte(`{"v":1}`), {0, '\n', 255}} {
		seal, back := UnsealMemory(SealMemory(mem, 7))
		if seal != 7 || !bytes.Equal(back, mem) {
			t.Errorf("memory %q came back as %q with seal %d", mem, back, seal)
		}
	}
	if seal, back := UnsealMemory([]byte(`{"v":1}`)); seal != 0 || string(back) != `{"v":1}` {
		t.Errorf("an unsealed memory read as seal %d, %q", seal, back)
	}
}
