// Package apicheck lists the exported API of shardlease's public packages
// in go doc's style, one declaration a line, so that a test can hold the
// list against a reviewed golden file (docs/api.txt): an export added,
// removed or changed fails the test until the file is regenerated and the
// change reviewed with it.
package apicheck
