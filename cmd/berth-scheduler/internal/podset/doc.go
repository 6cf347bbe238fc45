// Package podset identifies the pods that Berth admitted and the gang each
// belongs to, from the labels the Berth controller puts on them.
//
// It owns only that mapping from labels to keys. It must not read the API or
// the scheduler's cache: the plugins decide what to do with a key.
package podset
