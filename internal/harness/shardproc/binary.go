package shardproc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// LocateBinary returns the path of a server binary the tests run: the file
// named by the environment variable env if set, else <module root>/bin/name.
// The error says how to get it: build, the command that builds it.
func LocateBinary(env, name, build string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("$%s=%s: %w", env, p, err)
		}
		return p, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("cannot locate bin/%s: %w", name, err)
	}
	p := filepath.Join(root, "bin", name)
	if err := executable(p); err != nil {
		return "", fmt.Errorf("%s binary %s: %w; build it with %s, or set $%s", name, p, err, build, env)
	}
	return p, nil
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// ModuleRoot walks up from the working directory (a test's package
// directory) to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
