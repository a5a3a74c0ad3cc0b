package logging

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// FromSlog returns a zap logger that writes through l's handler, so that a
// program logging with log/slog gets shardlease's logs in its own stream,
// at its own levels: zap's debug, info, warn and error are slog's, and
// anything above error is slog's error. Fields become attributes; a named
// logger's name is the attribute "logger".
func FromSlog(l *slog.Logger) *zap.Logger {
	return FromSlogAt(l, zapcore.DebugLevel)
}

// FromSlogAt is FromSlog writing nothing below min, whatever the handler
// would take.
func FromSlogAt(l *slog.Logger, min zapcore.Level) *zap.Logger {
	return zap.New(slogCore{h: l.Handler(), min: min})
}

type slogCore struct {
	h   slog.Handler
	min zapcore.Level
}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// attrs turns zap fields into slog attributes, in the order of their keys.
func attrs(fs []zapcore.Field) []slog.Attr {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fs {
		f.AddTo(enc)
	}
	out := make([]slog.Attr, 0, len(enc.Fields))
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		out = append(out, slog.Any(k, enc.Fields[k]))
	}
	return out
}

func (c slogCore) Enabled(l zapcore.Level) bool {
	return l >= c.min && c.h.Enabled(context.Background(), slogLevel(l))
}

func (c slogCore) With(fs []zapcore.Field) zapcore.Core {
	return slogCore{h: c.h.WithAttrs(attrs(fs)), min: c.min}
}

func (c slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(attrs(fs)...)
	return c.h.Handle(context.Background(), r)
}

func (c slogCore) Sync() error { return nil }
