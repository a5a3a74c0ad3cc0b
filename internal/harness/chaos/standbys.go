package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
)

// Starts counts, in the workers' logs, the standbys started and the
// handlers started warm (on a standby's state: a warm move or a
// promotion) and cold (`shardd worker`'s "handler started" line says
// which).
type Starts struct {
	Standbys, Warm, Cold int
}

// Starts reads every worker's log.
func (f *Fleet) Starts() (Starts, error) {
	var st Starts
	for _, w := range f.Workers {
		if err := st.read(w.p.Log); err != nil {
			return st, err
		}
	}
	return st, nil
}

// read adds one log's lines.
func (st *Starts) read(path string) error {
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg  string `json:"msg"`
			Warm *bool  `json:"warm"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue // a line cut by a kill, or not JSON
		}
		switch {
		case line.Msg == "standby started":
			st.Standbys++
		case line.Msg == "handler started" && line.Warm != nil && *line.Warm:
			st.Warm++
		case line.Msg == "handler started":
			st.Cold++
		}
	}
	return sc.Err()
}
