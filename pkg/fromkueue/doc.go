// Package fromkueue rewrites Kueue's objects, and jobs labelled for Kueue,
// into Berth's: the kinds Berth shares with Kueue change group
// (kueue.x-k8s.io to berth.dev/v1alpha1, v1beta1's field names to
// v1beta2's), the labels and annotations Berth reads change prefix, and
// everything without a counterpart is named in a note instead of being
// dropped in silence. kubectl berth convert is its command.
//
// It is Berth's own code: no library converts between the two, and the
// rules are the small table of names below.
package fromkueue
