package shard

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxLabelLength bounds a zone, a label's key and a label's value, as
// Kubernetes bounds a label's name and value.
const MaxLabelLength = 63

// ValidateZone says what is wrong with z as a member's zone (Member.Zone),
// or nil: empty (no zone), or up to MaxLabelLength letters, digits, '-',
// '_' and '.', as a Kubernetes topology label's value
// ("eu-west-1a").
func ValidateZone(z string) error {
	if bad := labelProblem(z, false); bad != "" {
		return fmt.Errorf("%w: zone %q %s", ErrInvalidArgument, z, bad)
	}
	return nil
}

// ValidateLabels says what is wrong with a member's labels (Member.Labels),
// or nil: each key is 1 to MaxLabelLength of letters, digits, '-', '_',
// '.' and '/', each value up to MaxLabelLength of the same without '/'.
// It names the first bad key in sorted order.
func ValidateLabels(labels map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if k == "" {
			return fmt.Errorf("%w: a label key is empty", ErrInvalidArgument)
		}
		if bad := labelProblem(k, true); bad != "" {
			return fmt.Errorf("%w: label key %q %s", ErrInvalidArgument, k, bad)
		}
		if bad := labelProblem(labels[k], false); bad != "" {
			return fmt.Errorf("%w: label %s's value %q %s", ErrInvalidArgument, k, labels[k], bad)
		}
	}
	return nil
}

// labelProblem says what is wrong with s as a zone, a label key (slash
// allowed) or a label value, or "".
func labelProblem(s string, slash bool) string {
	if len(s) > MaxLabelLength {
		return fmt.Sprintf("is %d characters long; at most %d", len(s), MaxLabelLength)
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || slash && r == '/')
	}); i >= 0 {
		allowed := "letters, digits, '-', '_' and '.'"
		if slash {
			allowed = "letters, digits, '-', '_', '.' and '/'"
		}
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Sprintf("has %q at byte %d; use only %s", r, i, allowed)
	}
	return ""
}

// ParseLabels reads labels written as "k=v,k2=v2" (a command line's, an
// environment variable's): spaces around items are ignored, an empty
// string is none, and each item must have '='; the result is checked
// with ValidateLabels. A key given twice is an error naming it.
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("%w: label %q has no '=': write labels as key=value,key=value", ErrInvalidArgument, item)
		}
		if k == "" {
			return nil, fmt.Errorf("%w: label %q has an empty key: write labels as key=value,key=value", ErrInvalidArgument, item)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%w: label key %q is given twice", ErrInvalidArgument, k)
		}
		out[k] = v
	}
	if err := ValidateLabels(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Clone returns a copy of m whose slices, maps and marks the caller may
// change.
func (m Member) Clone() Member {
	m.Steps = slices.Clone(m.Steps)
	m.Labels = maps.Clone(m.Labels)
	m.Load = maps.Clone(m.Load)
	m.Standby = maps.Clone(m.Standby)
	if m.Cordon != nil {
		c := *m.Cordon
		m.Cordon = &c
	}
	return m
}
