package worker

// seenProblems remembers the foreign or malformed keys last reported, so a
// key that stays under the prefix is logged once, not on every listing of
// the assignor (a busy fleet lists many times a second). A problem that goes
// away and comes back is reported again.
type seenProblems map[string]bool

// fresh returns the problems not in the previous snapshot's list, and
// remembers this list in their place.
func (s *seenProblems) fresh(problems []string) []string {
	var out []string
	next := make(seenProblems, len(problems))
	for _, p := range problems {
		if !(*s)[p] && !next[p] {
			out = append(out, p)
		}
		next[p] = true
	}
	*s = next
	return out
}
