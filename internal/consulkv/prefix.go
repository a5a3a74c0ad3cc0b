package consulkv

import (
	"fmt"
	"strings"
)

// ValidPrefix checks a fleet's KV prefix P: required, no leading or
// trailing '/', no whitespace. It returns the problem as a sentence for a
// Validate that reports every problem at once, or "".
func ValidPrefix(prefix string) string {
	switch {
	case prefix == "":
		return "prefix is empty: name the fleet's KV prefix, e.g. shardlease/orders"
	case strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") || strings.ContainsAny(prefix, " \t\n"):
		return fmt.Sprintf("prefix %q must not start or end with '/' or contain spaces", prefix)
	}
	return ""
}
