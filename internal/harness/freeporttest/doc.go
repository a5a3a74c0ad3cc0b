// Package freeporttest rigs internal/freeport's picker for the tests of a
// server launcher's retry (internal/pgserver, internal/harness/consultest,
// internal/harness/natstest): Rigged hands out a port the test holds, as if
// another process had taken it between the pick and the bind.
//
// What it guarantees: the first Times calls return freeport.Pick's ports
// with the held port at index At; every later call is freeport.Pick's own.
// Calls counts every call, so a test can tell how many attempts a launcher
// made.
//
// How it fails: as freeport.Pick does (an error when too few free ports
// were found), and then nothing is rigged. It is test infrastructure: no
// shipped binary links it.
package freeporttest
