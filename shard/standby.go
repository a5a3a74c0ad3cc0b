package shard

// StandbyState is how far one standby's state has got, as the worker
// running it last reported (Members.ReportStandby): the assignor hands a
// shard over warm once its target's standby is Ready, and promotes the
// standby with the highest Applied when an owner with standbys is lost.
type StandbyState struct {
	// Applied is the last offset the standby's state includes (its
	// handler's own figure; -1: nothing yet).
	Applied int64 `json:"applied"`
	// Ready says the state includes everything the owner had committed
	// when the standby last looked: a move here now starts warm.
	Ready bool `json:"ready,omitempty"`
}

// StepStandbys is the protocol step of standbys and warm moves: the
// assignor lists standbys in assignment keys (Assignment.Standby), and
// BalancePolicy's prepare timeout and standbys are written, only while
// every live member speaks it. A worker writes its standby key
// (P/standby/<worker>) only while it runs standbys, so only then. Release
// 0.1.0 skips an assignment's standbys, lists a standby key as a foreign
// key among a snapshot's problems, and cannot read a policy with those
// fields.
const StepStandbys = "standbys"
