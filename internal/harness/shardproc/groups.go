package shardproc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// GroupMembers lists the live processes (not zombies) whose process group
// is one of groups, read from /proc: what `ps -o pgid` would show, one
// line per process naming its pid, group and command. A test of a
// supervisor uses it to prove that a stopped child left nothing behind.
func GroupMembers(groups ...int) ([]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("shardproc: reading /proc for process groups: %w", err)
	}
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parens.
		s := string(stat)
		end := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[end+1:])
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		pgrp, _ := strconv.Atoi(fields[2])
		for _, g := range groups {
			if pgrp == g {
				found = append(found, fmt.Sprintf("pid %d (pgid %d): %s", pid, pgrp, strings.TrimSpace(s[:end+1])))
			}
		}
	}
	return found, nil
}
