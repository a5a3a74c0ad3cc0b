// Package memory is the in-process offsets.Store: a map behind one mutex.
// Unit tests of everything that commits offsets use it.
//
// What it guarantees: the offsets rule (see package offsets), with the check
// and the write made atomic by the mutex; every method is safe for
// concurrent use.
//
// What it does not: durability. Everything is lost with the process, so it
// fences only owners inside the same process.
//
// How it fails: the errors of package offsets; a done context is reported
// before anything is read or written; after Close every method returns
// offsets.ErrClosed (and Close itself returns nil).
package memory
