// Package fastwatch builds informers whose watches decode each event in a
// single pass over its JSON.
//
// client-go reads every byte of a watch event five or six times before the
// object is ready: it frames the stream with one JSON scanner, decodes the
// envelope (scanning the object to keep its bytes), reads the object's
// kind with another scanner, validates the object, and only then decodes
// it. A busy cluster changes each Workload several times within seconds,
// and that decoding was the largest part of the controller's CPU. The API
// server writes a JSON watch stream one event per line, so here a line is
// one event and one decode, by json v2 (github.com/go-json-experiment/json,
// the encoding/json/v2 that Go ships behind GOEXPERIMENT=jsonv2), which
// decodes a Workload event in 0.66 of encoding/json's time with 0.52 of
// its allocations. For Workloads as the API server sends them, with three
// writers' managed fields, that is 0.18 of client-go's CPU, and 0.12 with
// Kind.WithoutManagedFields, which also allocates 0.39 of the memory
// (BenchmarkDecode).
//
// The watches take the encoding client-go negotiates. Since Kubernetes
// 1.37 the API server gzips a watch that starts with a streamed list, one
// gzip stream per event. Compressing a Workload event costs it about
// 37 µs and undoing it costs the client 10 µs, yet asking for none
// (DisableCompression) cost more on every side: over two baseline runs
// each, the API server's CPU went from 197-200 to 204-214 s, the
// controller's from 18.8-19.3 to 19.6-21.1 s and the runner's from 13.8-14.0
// to 16.9-18.9 s, the uncompressed events being 2.7 times the bytes to
// frame, encrypt and read. So the gzip stays.
//
// Only the watch changes: lists, the informer and its store are
// client-go's.
package fastwatch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/berth-dev/berth/pkg/metrics"
)

// Kind is a typed kind to watch in one pass.
type Kind struct {
	object   runtime.Object
	resource string
	decode   func(line []byte, opts json.Options) (watch.Event, error)
	// unmarshalers decode some of the kind's types their own way
	// (Sharing).
	unmarshalers *json.Unmarshalers
}

// open starts a watch of k over a response body.
func (k Kind) open(body io.ReadCloser) watch.Interface {
	opts := lenient
	if k.unmarshalers != nil {
		opts = json.JoinOptions(lenient, json.WithUnmarshalers(k.unmarshalers))
	}
	return newStream(body, func(line []byte) (watch.Event, error) { return k.decode(line, opts) })
}

// For names the kind of T, served as resource (its plural). It panics when
// T holds a field that json v2 decodes differently from encoding/json.
func For[T any, PT interface {
	*T
	runtime.Object
}](resource string) Kind {
	if err := decodesAsV1(reflect.TypeFor[T](), map[reflect.Type]bool{}); err != nil {
		panic(fmt.Sprintf("fastwatch: %s cannot be watched in one pass: %v", reflect.TypeFor[T](), err))
	}
	return Kind{
		object:   PT(new(T)),
		resource: resource,
		decode:   decode[T, PT],
	}
}

var (
	v1Unmarshaler = reflect.TypeFor[interface{ UnmarshalJSON([]byte) error }]()
	durationType  = reflect.TypeFor[time.Duration]()
)

// decodesAsV1 returns an error naming a field of t that json v2 decodes
// otherwise than encoding/json: an interface, whose numbers v2 makes
// float64 where the API machinery keeps int64, or a time.Duration, which
// v2 reads as a string. A type with its own UnmarshalJSON decodes itself
// the same under both.
func decodesAsV1(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] || t.Implements(v1Unmarshaler) || reflect.PointerTo(t).Implements(v1Unmarshaler) {
		return nil
	}
	seen[t] = true
	switch {
	case t == durationType:
		return errors.New("a time.Duration")
	case t.Kind() == reflect.Interface:
		return fmt.Errorf("an interface (%s)", t)
	case t.Kind() == reflect.Pointer, t.Kind() == reflect.Slice, t.Kind() == reflect.Array:
		return decodesAsV1(t.Elem(), seen)
	case t.Kind() == reflect.Map:
		return decodesAsV1(t.Elem(), seen)
	case t.Kind() == reflect.Struct:
		for f := range t.Fields() {
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			if err := decodesAsV1(f.Type, seen); err != nil {
				return fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
			}
		}
	}
	return nil
}

// WatchObserver is a ListerWatcher that is told of every watch an
// informer of NewInformer opens in place of its own Watch: a list streamed
// as a watch (metav1.ListOptions.SendInitialEvents), which client-go makes
// instead of a List, included.
type WatchObserver interface {
	toolscache.ListerWatcher
	WatchOpening(opts metav1.ListOptions)
}

// NewInformerFunc is the constructor controller-runtime's cache takes in
// cache.Options.NewInformer.
type NewInformerFunc = func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer

// NewInformer returns a constructor for cache.Options.NewInformer that
// builds informers as controller-runtime does, except that the informers
// of kinds watch in one pass, over httpClient. Their watches span all
// namespaces and carry no label or field selector, so the cache must not
// restrict those kinds.
func NewInformer(cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, kinds ...Kind) (NewInformerFunc, error) {
	codecs := serializer.NewCodecFactory(scheme)
	params := runtime.NewParameterCodec(scheme)
	watchers := map[reflect.Type]*watcher{}
	for _, k := range kinds {
		gvk, err := apiutil.GVKForObject(k.object, scheme)
		if err != nil {
			return nil, err
		}
		c, err := apiutil.RESTClientForGVK(gvk, false, false, cfg, codecs, httpClient)
		if err != nil {
			return nil, fmt.Errorf("client for %s: %w", gvk, err)
		}
		watchers[reflect.TypeOf(k.object)] = &watcher{client: c, params: params, kind: k}
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if w, ok := watchers[reflect.TypeOf(obj)]; ok {
			watchFunc := w.watch
			if o, ok := lw.(WatchObserver); ok {
				watchFunc = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
					o.WatchOpening(opts)
					return w.watch(ctx, opts)
				}
			}
			lw = &toolscache.ListWatch{
				ListWithContextFunc:  toolscache.ToListerWatcherWithContext(lw).ListWithContext,
				WatchFuncWithContext: watchFunc,
			}
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}, nil
}

// watcher opens the watches of one kind.
type watcher struct {
	client rest.Interface
	params runtime.ParameterCodec
	kind   Kind
}

func (w *watcher) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	opts.AllowWatchBookmarks = true
	req := w.client.Get().Resource(w.kind.resource).VersionedParams(&opts, w.params)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, err
	}
	metrics.WatchesStarted.WithLabelValues(w.kind.resource).Inc()
	return w.kind.open(body), nil
}

// lenient makes json v2 accept what encoding/json accepts, and the API
// machinery's decoder with it: a name given twice (the last one wins) and
// strings that are not valid UTF-8. Checking for either also cost a tenth
// of the decode.
var lenient = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// decode reads one line of a watch stream with opts: an event of a T, or
// an error event carrying a Status.
func decode[T any, PT interface {
	*T
	runtime.Object
}](line []byte, opts json.Options) (watch.Event, error) {
	var e struct {
		Type   watch.EventType `json:"type"`
		Object PT              `json:"object"`
	}
	err := json.Unmarshal(line, &e, opts)
	if err != nil || e.Type == watch.Error {
		// An error event carries a Status, not a T: decode the line
		// again, as one.
		var s struct {
			Type   watch.EventType `json:"type"`
			Object metav1.Status   `json:"object"`
		}
		serr := json.Unmarshal(line, &s, lenient)
		switch {
		case s.Type != watch.Error:
			return watch.Event{}, err
		case serr != nil:
			return watch.Event{}, serr
		}
		return watch.Event{Type: watch.Error, Object: &s.Object}, nil
	}
	switch e.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
	default:
		return watch.Event{}, fmt.Errorf("unknown watch event type %q", e.Type)
	}
	if e.Object == nil {
		return watch.Event{}, fmt.Errorf("%s watch event without an object", e.Type)
	}
	// As client-go's typed decoding leaves it: the type says the kind.
	e.Object.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return watch.Event{Type: e.Type, Object: e.Object}, nil
}

// stream is a watch.Interface over a response body of one event per line.
type stream struct {
	body   io.ReadCloser
	decode func([]byte) (watch.Event, error)
	result chan watch.Event
	done   chan struct{}
	stop   sync.Once
}

func newStream(body io.ReadCloser, decode func([]byte) (watch.Event, error)) *stream {
	s := &stream{body: body, decode: decode, result: make(chan watch.Event), done: make(chan struct{})}
	go s.receive()
	return s
}

// Stop ends the watch; the result channel closes soon after.
func (s *stream) Stop() {
	s.stop.Do(func() {
		close(s.done)
		_ = s.body.Close()
	})
}

// ResultChan is the channel of events, closed when the watch ends.
func (s *stream) ResultChan() <-chan watch.Event { return s.result }

// lineBuffer fits most events; a longer line is put together in a slice
// of its own.
const lineBuffer = 64 << 10

func (s *stream) receive() {
	defer close(s.result)
	defer s.Stop()
	r := bufio.NewReaderSize(s.body, lineBuffer)
	var long []byte
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			s.end(err)
			return
		}
		if len(line) <= 1 {
			continue
		}
		ev, err := s.decode(line)
		if err != nil {
			// A whole line that does not decode, even one cut short:
			// the server sent it so.
			s.fail(err)
			return
		}
		select {
		case s.result <- ev:
		case <-s.done:
			return
		}
	}
}

// end reports why the stream ended, unless it ended as streams do: closed
// by the server, by Stop, by the watch's context or by the connection.
func (s *stream) end(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) ||
		utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) {
		return
	}
	s.fail(err)
}

// fail ends the stream with an error event, unless it was stopped.
func (s *stream) fail(err error) {
	select {
	case <-s.done:
		return // Stopped: the read failed because Stop closed the body.
	default:
	}
	status := apierrors.NewInternalError(fmt.Errorf("unable to decode an event from the watch stream: %w", err)).ErrStatus
	select {
	case s.result <- watch.Event{Type: watch.Error, Object: &status}:
	case <-s.done:
	}
}
