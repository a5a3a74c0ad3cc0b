// Package offsetlog records every call an offsets.Store serves, as JSON
// lines, and reads such records back as one history of operations with
// their start and end times, for the chaos suite's checkers
// (internal/chaos) and for porcupine.
//
// Store wraps an offsets.Store. Each Fence, Commit and Load writes a "call"
// line (the worker, the operation and its arguments, the wall-clock time in
// nanoseconds) before it reaches the wrapped store, and a "return" line
// (the result and the time) after. Wall-clock time, not the monotonic clock,
// because the histories of several processes on one machine are merged.
//
// What it guarantees: no call reaches the wrapped store unless its call
// line was written (a call line that cannot be written fails the call, so
// the history never misses an operation that may have taken effect). A
// process killed between the two lines leaves a call without a return,
// which Read reports as an operation whose outcome is unknown and which
// never ended, exactly what a checker must assume of it. Lines are written
// with one write(2) each to a file opened O_APPEND, so they survive a
// SIGKILL of the writer.
//
// What it does not: it does not fsync (a machine crash may lose lines), and
// it trusts the clocks of the merged processes to be the same clock.
package offsetlog
