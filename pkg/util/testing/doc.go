// Package testing has small builders of the API objects for tests:
// MakeWorkload("a", "ns").Queue("q").PodSets(...).Obj() and friends. They
// build the real API types so that tests exercise the same code paths as
// the controllers. It must only be imported from tests.
package testing
