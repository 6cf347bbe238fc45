// Package logging holds helpers for Berth's logr loggers.
package logging

import (
	"slices"

	"github.com/go-logr/logr"
)

// Lazy returns log with WithValues put off until a line is written.
// controller-runtime adds the object's name and a reconcile ID to the
// logger of every reconcile, and zap encodes such values at once: a few
// microseconds each, for loggers that almost never write. Through Lazy
// they cost an append, and are encoded only for the lines written.
func Lazy(log logr.Logger) logr.Logger {
	sink := log.GetSink()
	if sink == nil {
		return log
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		// lazySink is one more frame between the caller and the sink.
		sink = cd.WithCallDepth(1)
	}
	return logr.New(&lazySink{sink: sink})
}

type lazySink struct {
	sink logr.LogSink
	kvs  []any
}

var _ logr.LogSink = (*lazySink)(nil)

// Init does nothing: the wrapped sink was initialised by its own logger.
func (l *lazySink) Init(logr.RuntimeInfo) {}

// Enabled asks the wrapped sink.
func (l *lazySink) Enabled(level int) bool { return l.sink.Enabled(level) }

// Info writes a line with the values put off so far.
func (l *lazySink) Info(level int, msg string, kvs ...any) {
	l.resolved().Info(level, msg, kvs...)
}

// Error writes an error line with the values put off so far.
func (l *lazySink) Error(err error, msg string, kvs ...any) {
	l.resolved().Error(err, msg, kvs...)
}

// WithValues only remembers kvs.
func (l *lazySink) WithValues(kvs ...any) logr.LogSink {
	return &lazySink{sink: l.sink, kvs: append(slices.Clip(l.kvs), kvs...)}
}

// WithName names the wrapped sink at once: names are rare.
func (l *lazySink) WithName(name string) logr.LogSink {
	return &lazySink{sink: l.sink.WithName(name), kvs: l.kvs}
}

// resolved is the wrapped sink with the values put off so far.
func (l *lazySink) resolved() logr.LogSink {
	if len(l.kvs) == 0 {
		return l.sink
	}
	return l.sink.WithValues(l.kvs...)
}
