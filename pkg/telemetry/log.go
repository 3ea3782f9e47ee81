// NewLogger sets up go-kit/log: one JSON object per line on stdout,
// with a timestamp, the service name and a level filter.

package telemetry

import (
	"flag"
	"io"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// LogConfig of the logger.
type LogConfig struct {
	Level  string
	Format string
}

// RegisterFlags adds log.level and log.format (env LOG_LEVEL, LOG_FORMAT).
func (c *LogConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Level, "log.level", "info", "debug, info, warn or error")
	fs.StringVar(&c.Format, "log.format", "json", "json or logfmt")
}

// NewLogger returns a logger writing to w.
func NewLogger(w io.Writer, service string, cfg LogConfig) log.Logger {
	w = log.NewSyncWriter(w)
	var logger log.Logger
	if cfg.Format == "logfmt" {
		logger = log.NewLogfmtLogger(w)
	} else {
		logger = newJSONLogger(w)
	}
	logger = level.NewFilter(logger, levelOption(cfg.Level))
	return log.With(logger, "ts", log.DefaultTimestampUTC, "service", service)
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
