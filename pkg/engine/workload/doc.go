// Package workload computes, from a Workload object, what admission needs
// to know about it: its key, priority, queue time, per-podset requests and
// the quota it holds. It also has condition helpers shared with the
// controllers.
//
// It is pure: it reads the object it is given, never mutates it, and does
// no I/O. An Info is immutable once built, so that snapshots can share it.
package workload
