package memory

import "time"

// Clock is the coordinator's source of time. Session deadlines, lock-delays
// and member grace periods are all read from it, and it schedules the timers
// that make sessions expire when nobody calls the coordinator.
//
// AfterFunc must not run f before Now has reached the moment f was scheduled
// for: the coordinator trusts a fired timer to find its deadline due. f runs
// on its own goroutine and may call into the coordinator.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled call that can be cancelled. Stop reports whether it
// prevented the call; the coordinator does not depend on the answer, because
// a timer that fires late finds nothing due and does nothing.
type Timer interface {
	Stop() bool
}

// realClock is the time package. Inside a testing/synctest bubble it is the
// bubble's fake clock, which is why tests need no clock of their own.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
