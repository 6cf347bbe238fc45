package fastwatch

import (
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Sharing is k, whose objects share one decoded V wherever their V is
// written the same, byte for byte: the second and later objects get a
// shallow copy of the first one's V, whose slices, maps and pointers they
// share, instead of decoding their own.
//
// Cached objects are read, never written (controller-runtime's cache
// hands out copies unless asked not to, and then the object must not be
// changed), so sharing a part of them changes nothing a reader sees. It
// saves the cache's memory when many objects hold the same large part:
// the Workloads of a sweep of Jobs made from one template, whose pod
// templates differ in their labels and not in their spec, hold one pod
// spec between them (at 50,000 Workloads of a few templates, about a
// kilobyte each of a 4 KB Workload). A V found is not decoded again.
//
// At most capacity Vs are remembered, each written in at most
// maxSharedBytes; when the table is full it is emptied and fills again
// with the Vs that arrive, so objects of many different Vs cost a
// lookup and nothing more. A V not found is decoded by json v2 on its
// own, without the kind's other unmarshalers.
func Sharing[V any](k Kind, capacity int) Kind {
	t := &sharedValues[V]{capacity: capacity, values: map[string]V{}}
	u := json.UnmarshalFromFunc(t.unmarshal)
	if k.unmarshalers != nil {
		u = json.JoinUnmarshalers(k.unmarshalers, u)
	}
	k.unmarshalers = u
	return k
}

// maxSharedBytes bounds the JSON of a V that Sharing remembers: a larger
// one is decoded for its object alone.
const maxSharedBytes = 16 << 10

// sharedValues is the table of Sharing: decoded Vs by their JSON.
type sharedValues[V any] struct {
	mu       sync.Mutex
	capacity int
	values   map[string]V
}

func (t *sharedValues[V]) unmarshal(dec *jsontext.Decoder, v *V) error {
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if len(raw) > maxSharedBytes {
		return json.Unmarshal(raw, v, lenient)
	}
	t.mu.Lock()
	shared, ok := t.values[string(raw)]
	t.mu.Unlock()
	if ok {
		*v = shared
		return nil
	}
	if err := json.Unmarshal(raw, v, lenient); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.values) >= t.capacity {
		clear(t.values)
	}
	t.values[string(raw)] = *v
	return nil
}

// len is the number of Vs remembered.
func (t *sharedValues[V]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.values)
}
