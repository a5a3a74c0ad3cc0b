// Package tb is what the test launchers (internal/harness/consultest,
// internal/harness/pgtest) use of a test: T has the methods of testing.TB with
// these names, which every *testing.T and *testing.B has, and Runner the
// one of *testing.M. They are interfaces of their own so that the launchers
// do not import package testing: a shipped binary that starts servers
// through them (cmd/shardbench) must not link it
// (cmd/shardbench's TestShippedBinariesDoNotLinkTesting).
package tb
