package election

import (
	"fmt"
	"sync"

	"github.com/shardlease/shardlease/shard"
)

// Role is an instance's part in the election; see the package doc.
type Role string

// Roles.
const (
	RoleCandidate    Role = "candidate"
	RoleLeader       Role = "leader"
	RoleSteppingDown Role = "stepping_down"
	RoleFollower     Role = "follower"
	RoleStopped      Role = "stopped"
)

// Change is an instance's role and what it knows of the leader, as reported
// to Config.OnChange and by Election.Status.
type Change struct {
	// Instance is the reporting instance's ID.
	Instance string
	Role     Role
	// Leader is the leading instance's ID: this instance when it leads,
	// the other one when it follows, empty otherwise.
	Leader string
	// Token is the leader's term token: this instance's when it leads or
	// steps down (the term that is ending), the leader's when it follows,
	// 0 otherwise.
	Token shard.Token
	// Cause says why a term ended (RoleSteppingDown only): it wraps
	// worker.ErrRevoked or worker.ErrLost.
	Cause error
}

func (c Change) String() string {
	switch c.Role {
	case RoleLeader:
		return fmt.Sprintf("%s: leader (token %d)", c.Instance, c.Token)
	case RoleSteppingDown:
		return fmt.Sprintf("%s: stepping_down (term %d: %v)", c.Instance, c.Token, c.Cause)
	case RoleFollower:
		return fmt.Sprintf("%s: follower of %s (token %d)", c.Instance, c.Leader, c.Token)
	default:
		return fmt.Sprintf("%s: %s", c.Instance, c.Role)
	}
}

// tracker derives the role from two sources: the term (started, ending,
// returned) and the election's lock as this instance last read it (who
// holds it). Every event applies its change and reports it while holding
// notify, so reports reach OnChange in the order the changes happened.
type tracker struct {
	me       string
	onChange func(Change)

	notify sync.Mutex
	mu     sync.Mutex // guards the fields below; never held during OnChange
	// leading: a term's Lead is running (or between restarts) and its
	// context is live. stepping: its context ended, Lead has not returned.
	leading, stepping, stopped bool
	token                      shard.Token
	cause                      error
	// owner is the instance whose session holds the lock as last read,
	// with its token; "" when the lock is free.
	owner      string
	ownerToken shard.Token
	last       Change
}

func newTracker(me string, onChange func(Change)) *tracker {
	return &tracker{me: me, onChange: onChange, last: Change{Instance: me, Role: RoleCandidate}}
}

func (t *tracker) current() Change {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// update applies f and reports the resulting role if it differs from the
// last one reported.
func (t *tracker) update(f func()) {
	t.notify.Lock()
	defer t.notify.Unlock()
	t.mu.Lock()
	f()
	c := t.roleLocked()
	changed := c.Role != t.last.Role || c.Leader != t.last.Leader || c.Token != t.last.Token
	t.last = c
	t.mu.Unlock()
	if changed && t.onChange != nil {
		t.onChange(c)
	}
}

func (t *tracker) roleLocked() Change {
	c := Change{Instance: t.me}
	switch {
	case t.stopped:
		c.Role = RoleStopped
	case t.leading:
		c.Role, c.Leader, c.Token = RoleLeader, t.me, t.token
	case t.stepping:
		c.Role, c.Token, c.Cause = RoleSteppingDown, t.token, t.cause
	case t.owner != "" && t.owner != t.me:
		c.Role, c.Leader, c.Token = RoleFollower, t.owner, t.ownerToken
	default:
		c.Role = RoleCandidate
	}
	return c
}

// begin reports the starting role (candidate) once Run starts.
func (t *tracker) begin() {
	t.notify.Lock()
	defer t.notify.Unlock()
	if t.onChange != nil {
		t.onChange(t.current())
	}
}

func (t *tracker) started(token shard.Token) {
	t.update(func() { t.leading, t.stepping, t.token, t.cause = true, false, token, nil })
}

func (t *tracker) ending(cause error) {
	t.update(func() { t.leading, t.stepping, t.cause = false, true, cause })
}

// returned: Lead returned; ctxDone tells whether its term had ended. A Lead
// that returns during its term is run again: still leading.
// One that returns because the instance is leaving (Run's context ended)
// stays stepping_down until stop.
func (t *tracker) returned(ctxDone, leaving bool) {
	if ctxDone && !leaving {
		t.update(func() { t.stepping = false })
	}
}

// saw records the lock's holder as a read of its key shows it.
func (t *tracker) saw(k shard.LockKey) {
	owner, token := "", shard.Token(0)
	if k.Held() {
		owner, token = k.Worker, k.Token
	}
	t.update(func() { t.owner, t.ownerToken = owner, token })
}

func (t *tracker) stop() {
	t.update(func() { t.stopped, t.leading, t.stepping = true, false, false })
}
