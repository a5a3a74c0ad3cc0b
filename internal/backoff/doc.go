// Package backoff is the jittered retry pacing that the worker, its lease
// and the election share: one seeded source of randomness per owner, so a
// simulated fleet replays its waits, and capped exponential backoff with
// jitter, so many retries spread out instead of arriving together.
package backoff
