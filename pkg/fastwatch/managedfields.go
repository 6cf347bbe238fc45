package fastwatch

import (
	"bytes"

	"github.com/go-json-experiment/json"
	"k8s.io/apimachinery/pkg/watch"
)

// WithoutManagedFields is k, whose watch events arrive with the object's
// metadata.managedFields left out, for a cache that strips them anyway
// (controller-runtime's cache.TransformStripManagedFields).
//
// A Workload's managed fields are more than half of its JSON: an entry per
// writer, each with the path of every field it set. Decoding them, only
// for the transform to drop them, was about half of the watch's cost. They
// are cut from the event's bytes before it is decoded, by a scan that only
// matches brackets and quotes. An event the cut does not understand (the
// key spelt with spaces, say) is decoded whole, as before.
func (k Kind) WithoutManagedFields() Kind {
	decode := k.decode
	k.decode = func(line []byte, opts json.Options) (watch.Event, error) { return decode(cutManagedFields(line), opts) }
	return k
}

var managedFieldsKey = []byte(`"managedFields":`)

// cutManagedFields removes "managedFields" and its value from the metadata
// of the object of a watch event, {"type":…,"object":{…,"metadata":{…}}},
// in place, and returns what is left of line. It returns line as it was
// when the key is not there, not in that place, or not followed by a
// well-formed list.
func cutManagedFields(line []byte) []byte {
	from := 0
	for {
		i := bytes.Index(line[from:], managedFieldsKey)
		if i < 0 {
			return line
		}
		start := from + i
		from = start + len(managedFieldsKey)
		if !inObjectMetadata(line[:start]) {
			// A key spelt so elsewhere, in a list or a spec: not the one.
			continue
		}
		end := skipValue(line, from)
		if end < 0 {
			return line
		}
		switch {
		case end < len(line) && line[end] == ',':
			end++
		case line[start-1] == ',':
			start--
		}
		n := copy(line[start:], line[end:])
		return line[:start+n]
	}
}

// inObjectMetadata says whether the end of prefix, the beginning of a
// watch event, is outside any string and directly inside the object
// under "metadata" of the object under "object" of the event.
func inObjectMetadata(prefix []byte) bool {
	// The key each open object or list was opened under; nil for a list's
	// elements and for the event itself.
	var path [4][]byte
	depth := 0
	var lastString []byte
	for i := 0; i < len(prefix); i++ {
		switch prefix[i] {
		case '"':
			end := skipString(prefix, i)
			if end < 0 {
				return false // the prefix ends inside a string
			}
			lastString = prefix[i+1 : end-1]
			i = end - 1
		case '{', '[':
			if depth < len(path) {
				var key []byte
				if prefix[i] == '{' && depth > 0 && precededByColon(prefix[:i]) {
					key = lastString
				}
				path[depth] = key
			}
			depth++
		case '}', ']':
			depth--
		}
	}
	return depth == 3 && string(path[1]) == "object" && string(path[2]) == "metadata"
}

// precededByColon says whether b ends in a colon, spaces aside: whether
// what comes after it is the value of a key.
func precededByColon(b []byte) bool {
	b = bytes.TrimRight(b, " \t\r\n")
	return len(b) > 0 && b[len(b)-1] == ':'
}

// skipString returns the index just after the string that starts at b[i],
// a quote, or -1 when b ends first.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index just after the list or null that starts at
// b[i], or -1 when something else starts there or b ends first.
func skipValue(b []byte, i int) int {
	if bytes.HasPrefix(b[i:], []byte("null")) {
		return i + len("null")
	}
	if i >= len(b) || b[i] != '[' {
		return -1
	}
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			end := skipString(b, j)
			if end < 0 {
				return -1
			}
			j = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return -1
}
