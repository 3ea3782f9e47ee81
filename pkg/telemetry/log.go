// NewLogger sets up go-kit/log: one JSON object per line on stdout,
// with a timestamp, the service name and a level filter.

package telemetry

import (
	"flag"
	"io"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// LogConfig of the logger.
type LogConfig struct {
	Level  string
	Format string
	// FlushInterval, when positive, gathers lines and writes them together
	// at most this late (bufferedLog); 0 writes each line at once. Set
	// before RegisterFlags, it is the flag's default.
	FlushInterval time.Duration
}

// RegisterFlags adds log.level and log.format (env LOG_LEVEL, LOG_FORMAT).
func (c *LogConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Level, "log.level", "info", "debug, info, warn or error")
	fs.StringVar(&c.Format, "log.format", "json", "json or logfmt")
	fs.DurationVar(&c.FlushInterval, "log.flush-interval", c.FlushInterval,
		"0 writes each log line at once; a positive duration gathers lines and writes them together at most this late "+
			"(one system call for many access-log lines; a process killed outright loses the lines not yet written)")
}

// NewLogger returns a logger writing to w.
func NewLogger(w io.Writer, service string, cfg LogConfig) log.Logger {
	logger, _ := NewFlushingLogger(w, service, cfg)
	return logger
}

// NewFlushingLogger is NewLogger with the function that writes out what
// cfg.FlushInterval holds back; call it before the process exits.
func NewFlushingLogger(w io.Writer, service string, cfg LogConfig) (log.Logger, func()) {
	flush := func() {}
	if cfg.FlushInterval > 0 {
		b := newBufferedLog(w, cfg.FlushInterval)
		w, flush = b, b.Flush
	} else {
		w = log.NewSyncWriter(w)
	}
	var logger log.Logger
	if cfg.Format == "logfmt" {
		logger = log.NewLogfmtLogger(w)
	} else {
		logger = newJSONLogger(w)
	}
	logger = level.NewFilter(logger, levelOption(cfg.Level))
	return log.With(logger, "ts", log.DefaultTimestampUTC, "service", service), flush
}

func levelOption(l string) level.Option {
	switch l {
	case "debug":
		return level.AllowDebug()
	case "warn":
		return level.AllowWarn()
	case "error":
		return level.AllowError()
	default:
		return level.AllowInfo()
	}
}
