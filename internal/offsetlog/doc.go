// Package offsetlog records every call an offsets.Store serves, as JSON
// lines, and reads such records back as one history of operations with
// their start and end times, for the chaos suite's checkers
// (internal/harness/chaos) and for porcupine.
//
// Store wraps an offsets.Store. Each Fence, Commit and Load writes a "call"
// line (the worker, the operation and its arguments, the wall-clock time in
// nanoseconds) before it reaches the wrapped store, and a "return" line
// (the result and the time) after. Wall-clock time, not the monotonic clock,
// because the histories of several processes on one machine are merged.
//
// The same file holds the runs of the process's shard handlers (Run, from
// Store.StartRun): a "start" line when a handler begins (after its claim
// was fenced), an "effect" line each time it is about to act, written only
// after its claim allowed it (worker.Claim.Err), and an "end" line when it
// returns. ReadAll reads both kinds back; they share one clock, so a
// checker can ask whether two processes ever acted for one shard at once.
//
// What it guarantees: no call reaches the wrapped store unless its call
// line was written (a call line that cannot be written fails the call, so
// the history never misses an operation that may have taken effect). A
// process killed between the two lines leaves a call without a return,
// which Read reports as an operation whose outcome is unknown and which
// never ended, exactly what a checker must assume of it. Likewise a
// handler that follows Run.Effect's contract makes no effect whose line was
// not written, and a run killed before its end line reads as never ended.
// Lines are written with one write(2) each to a file opened O_APPEND, so
// they survive a SIGKILL of the writer.
//
// What it does not: it does not fsync (a machine crash may lose lines), and
// it trusts the clocks of the merged processes to be the same clock.
package offsetlog
