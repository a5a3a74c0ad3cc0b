// Package bench is shardbench's core: what a scenario is and gets (Scenario,
// Suite, Env, Sizes), the rows it returns (Result), the run's report
// (Report: its JSON, table, Markdown and goal check), and the documents a
// run writes or regenerates (docs/benchmarks.md's generated section,
// docs/bench/run.json, and the plots img/ownership.svg and img/load.svg).
// The scenarios are packages of their own under internal/bench; the fleets
// they run on are internal/bench/fleet's; cmd/shardbench parses the command
// line and wires them together.
//
// What it guarantees: a run's section of the document is rendered from its
// JSON alone, so RenderDocs regenerates exactly what WriteDocs wrote, and a
// run of some scenarios replaces only theirs in the JSON (docsmerge.go), so
// every ratio compares rows measured side by side in one run. p50, p99 and
// max are nearest-rank over a row's trials. A figure with no value (NaN)
// never breaks the JSON: it is dropped, and the row's note says so.
//
// What it does not do: judge a figure beyond the goal its scenario states,
// or measure anything itself; ObtainConsul only connects to or starts the
// run's agent.
//
// How it fails: a scenario's error is recorded in the report beside the
// rows it measured before it, and the next scenario runs; documents that
// cannot be read or written, or a document without its markers, are errors
// naming the file.
package bench
