// Package history checks a recorded history of concurrent Fence and Commit
// calls on an offsets.Store, and the checkpoints loaded after it, against
// the fence's rule: Op is one call as its client saw it (with positions in
// one sequence shared by every client), Check returns every way the history
// breaks the rule. It imports no testing package, so the in-process fleet
// that records such histories (the demo and the simulation) can use it;
// offsetstest runs it on every store under a concurrent workload.
//
// What it checks are necessary conditions any correct store shows (no
// stale write accepted, the final floor and offset as the accepted
// operations imply, every rejection justified); a full linearizability
// check is lincheck's.
package history
