// Package logging builds the zap loggers of shardlease's commands: JSON for
// daemons, human-readable console output for the demo and the CLI.
package logging

import (
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Console returns a human-readable logger writing to w at level.
func Console(level string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(w), lvl)
	return zap.New(core), nil
}

// ConsoleSince is Console with each line stamped with the time since
// start, as "[  8.0s]": the demo's own progress lines are stamped so, and
// its workers' lines then read on the same clock.
func ConsoleSince(level string, w io.Writer, start time.Time) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = func(t time.Time, pae zapcore.PrimitiveArrayEncoder) {
		pae.AppendString(fmt.Sprintf("[%6.1fs]", t.Sub(start).Seconds()))
	}
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(w), lvl)
	return zap.New(core), nil
}

// JSON returns a structured JSON logger writing to w at level.
func JSON(level string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(w), lvl)
	return zap.New(core), nil
}
