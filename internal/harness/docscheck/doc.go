// Package docscheck keeps the documentation under docs/ honest: its tests
// read what the documents state and check it against the code and against
// real servers, so a document cannot drift from what the product does.
//
//   - docs/security.md: the worker, reader and operator ACL policies (the
//     HCL blocks marked <!-- acl-test: NAME -->) are applied to a real
//     Consul with ACLs on and default deny; a worker runs with its policy
//     and cannot write outside its prefix, and each operator policy allows
//     what the document says and no more.
//   - docs/tuning.md: every lease policy of its worked examples (marked
//     <!-- policy-test … -->) passes or fails shard.LeasePolicy's rule, with
//     the need and step-down point the document states, and a failing one
//     is quoted with the worker's exact refusal.
//
// The package has no code of its own; it exists for its tests. They fail,
// never skip, when Consul cannot be started (see internal/harness/consultest).
package docscheck
