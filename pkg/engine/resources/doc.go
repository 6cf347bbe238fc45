// Package resources owns the arithmetic of quota: flavor/resource keys,
// integer quantities and request vectors.
//
// Quantities are int64 in the resource's canonical unit: milli-units for
// cpu (so that 500m stays exact) and whole units for everything else
// (bytes for memory, devices for extended resources). Integer arithmetic
// keeps comparisons exact and allocation-free on the scheduling path.
//
// It must not know about queues, cohorts or workloads, and does no I/O.
package resources
