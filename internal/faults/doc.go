// Package faults injects the faults shardlease must survive into one
// worker's view of the world, in-process: a Coordinator wrapper whose calls
// can hang (a paused process or a stalled network) or fail (a crash or a
// partition), and a Gate that freezes a handler the way a stop-the-world
// pause would. The demo, the worker tests and the simulation use it.
package faults
