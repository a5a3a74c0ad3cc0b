package pgserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// EnvBinDir names an environment variable that, when set, is the directory
// holding initdb and postgres.
const EnvBinDir = "SHARDLEASE_PG_BIN"

// Fix is what a failure to find or run PostgreSQL tells the reader to do.
const Fix = "install PostgreSQL with `bash scripts/postgres.sh` (Debian's postgresql package), or set $" + EnvBinDir +
	" to the directory holding initdb and postgres"

// binDir finds the directory holding initdb and postgres.
func binDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		if err := hasBinaries(d); err != nil {
			return "", fmt.Errorf("$%s=%s: %w", EnvBinDir, d, err)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest major version first: "15" sorts after "9.6" only numerically.
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, d := range dirs {
		if hasBinaries(d) == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if d := filepath.Dir(p); hasBinaries(d) == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb and postgres under /usr/lib/postgresql/*/bin or on PATH")
}

func majorOf(dir string) int {
	v := filepath.Base(filepath.Dir(dir))
	n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n
}

func hasBinaries(dir string) error {
	for _, b := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil {
			return err
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not executable", filepath.Join(dir, b))
		}
	}
	return nil
}

// owner says whom initdb and postgres run as: nil (this process's user)
// unless we are root, which both refuse; then the postgres user.
type owner struct {
	cred     *syscall.Credential // nil: run as ourselves
	uid, gid int
}

func serverOwner() (owner, error) {
	if os.Geteuid() != 0 {
		return owner{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return owner{}, fmt.Errorf("running as root, and initdb refuses root, but there is no postgres user to run it as (%v)", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return owner{}, fmt.Errorf("user postgres: %w", err)
	}
	return owner{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid: uid, gid: gid}, nil
}
