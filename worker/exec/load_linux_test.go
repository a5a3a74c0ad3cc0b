package exec

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardlease/shardlease/worker"
)

// TestLoadPipeWriteEndIsTheChilds: while the child runs, this process
// holds only the read end of the child's load pipe, close-on-exec (so no
// other child inherits it, and end-of-file comes when the child closes
// its end); once Process returned it holds neither.
func TestLoadPipeWriteEndIsTheChilds(t *testing.T) {
	s := newSupervised(t, time.Minute, `echo fd3=$(readlink /proc/$$/fd/3); while :; do sleep 0.1; done`)
	cancel, done := s.start(t)
	pipe := regexp.MustCompile(`fd3=(pipe:\[\d+\])`)
	var m []string
	waitUntil(t, 10*time.Second, "the child names its descriptor 3", func() bool {
		m = pipe.FindStringSubmatch(s.out.String())
		return m != nil
	})
	// The child may print before this process has closed its copy of the
	// write end (Process closes it once Start has returned): wait for that.
	var ends []int
	waitUntil(t, 5*time.Second, "this process closes its copy of the load pipe's write end", func() bool {
		ends = ownEnds(t, m[1])
		return len(ends) == 1
	})
	if len(ends) != 1 || ends[0]&syscall.O_ACCMODE != syscall.O_RDONLY || ends[0]&syscall.O_CLOEXEC == 0 {
		t.Errorf("this process holds %s with flags %o, want the read end alone, close-on-exec", m[1], ends)
	}
	cancel(worker.ErrRevoked)
	if err := <-done; err != nil {
		t.Fatalf("Process = %v", err)
	}
	if ends := ownEnds(t, m[1]); len(ends) != 0 {
		t.Errorf("this process still holds %s after Process returned (flags %o)", m[1], ends)
	}
}

// ownEnds returns the open flags of each of this process's descriptors
// that is target (a link such as "pipe:[123]").
func ownEnds(t *testing.T, target string) []int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var flags []int
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err != nil || link != target {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name()))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(info), "flags:")
		f, err := strconv.ParseInt(strings.Fields(rest)[0], 8, 64)
		if err != nil {
			t.Fatalf("flags of descriptor %s in %q: %v", fd.Name(), info, err)
		}
		flags = append(flags, int(f))
	}
	return flags
}
